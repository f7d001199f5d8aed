"""kernel-trace-analysis: rocprofv3 ATT and PMC captures in, a prioritized optimization plan out."""

__version__ = "0.1.0"
