"""Wave-level analyses over per-wave ATT files (entry point: analyze.analyze_waves)."""
