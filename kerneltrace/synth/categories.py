"""The decoder's instruction categories for a mnemonic, and instruction encoding sizes (Vaddr steps)."""

from __future__ import annotations

from kerneltrace.isa.encoding import encoded_size

# rocprofiler_thread_trace_decoder_inst_category_t (docs/rocprof-outputs.md §8.9)
CAT_NONE, CAT_SMEM, CAT_SALU, CAT_VMEM, CAT_FLAT, CAT_LDS, CAT_VALU = 0, 1, 2, 3, 4, 5, 6
CAT_JUMP, CAT_NEXT, CAT_IMMED, CAT_CONTEXT, CAT_MESSAGE = 7, 8, 9, 10, 11


def decoder_category(asm: str, *, taken: bool = True) -> int:
    """The decoder's instruction category for a mnemonic (branches: JUMP if taken, else NEXT)."""
    op = asm.split(None, 1)[0].lower() if asm.strip() else ""
    if op.startswith(("s_load", "s_buffer_load", "s_store", "s_dcache", "s_memtime", "s_memrealtime")):
        return CAT_SMEM
    if op.startswith(("s_waitcnt", "s_nop", "s_barrier", "s_sleep", "s_setprio", "s_code_end")):
        return CAT_IMMED
    if op.startswith(("s_endpgm", "s_sendmsg")):
        return CAT_MESSAGE
    if op.startswith(("s_cbranch", "s_branch", "s_setpc", "s_swappc")):
        return CAT_JUMP if taken else CAT_NEXT
    if op.startswith("s_"):
        return CAT_SALU
    if op.startswith(("buffer_", "global_", "tbuffer_", "scratch_")):
        return CAT_VMEM
    if op.startswith("flat_"):
        return CAT_FLAT
    if op.startswith("ds_"):
        return CAT_LDS
    if op.startswith("v_"):
        return CAT_VALU
    return CAT_NONE


def instruction_size(asm: str) -> int:
    """Encoding size in bytes (the step between consecutive Vaddr values): the ISA table's."""
    return encoded_size(asm)
