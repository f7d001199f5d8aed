"""Wave timelines for Perfetto: one dispatch dir's waves, states, instructions and flows as a trace (entry point: export)."""
