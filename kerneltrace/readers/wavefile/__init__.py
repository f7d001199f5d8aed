"""Per-wave ATT file reader (public API: reader)."""
