"""Per-wave ATT file reader (public API: reader; fast paths: batch, simd; fallback: json_fallback)."""
