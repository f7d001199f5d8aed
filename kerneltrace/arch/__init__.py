"""Architecture knowledge: the arch table, arch detection and per-dispatch resource metadata."""
