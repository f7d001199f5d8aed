"""The five hotspot patterns (reference-analyzers.md), one import point for them.

P1/P2 live in vmem_patterns.py, P3/P4 in lds_scalar_patterns.py, P5 in entry_line.py and the
shared load → wait walk in drain.py; the rule registry is rules/__init__.py.
"""

from __future__ import annotations

from kerneltrace.plan.rules.drain import (
    HBM_LATENCY_CYCLES,
    LDS_LATENCY_CYCLES,
    Drain,
    exposed_wait_stall,
    first_draining_wait,
)
from kerneltrace.plan.rules.entry_line import entry_line_artifact
from kerneltrace.plan.rules.lds_scalar_patterns import lds_read_before_mfma, scale_load_late
from kerneltrace.plan.rules.vmem_patterns import (
    loads_in_mfma_loop,
    stalling_bursts,
    vmem_queue_burst,
)

__all__ = [
    "HBM_LATENCY_CYCLES",
    "LDS_LATENCY_CYCLES",
    "Drain",
    "entry_line_artifact",
    "exposed_wait_stall",
    "first_draining_wait",
    "lds_read_before_mfma",
    "loads_in_mfma_loop",
    "scale_load_late",
    "stalling_bursts",
    "vmem_queue_burst",
]
