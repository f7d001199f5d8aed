"""PMC counters: the per-arch counter table and the single-pass job planner."""
