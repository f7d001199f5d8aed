"""ISA knowledge: instruction classification, register usage and MFMA latency tables."""
