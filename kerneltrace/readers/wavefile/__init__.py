"""Per-wave ATT file reader (public API: reader; fast path: simd, fallback: json_fallback)."""
