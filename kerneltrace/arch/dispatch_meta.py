"""DispatchMeta: one dispatch's resource metadata (from kernel_trace CSV / rocpd), shared by the
readers that fill it and the occupancy model that consumes it."""

from __future__ import annotations

from kerneltrace.records import record


@record(frozen=True)
class DispatchMeta:
    """Dispatch row fields as reported by rocprofv3; None = column absent or unparsable.

    `vgpr_count`/`accum_vgpr_count` are rocprofv3's VGPR_Count / Accum_VGPR_Count as written
    (on gfx950 VGPR_Count is half the allocation and Accum_VGPR_Count 0: the occupancy model
    corrects for that, readers must not). `lds_bytes` is LDS_Block_Size (or the older
    Group_Segment_Size), `scratch_bytes` Scratch_Size / Private_Segment_Size, `workgroup_size`
    and `grid_size` the x*y*z products (grid in work-items).
    """

    kernel_name: str | None = None
    dispatch_id: int | None = None
    vgpr_count: int | None = None
    accum_vgpr_count: int | None = None
    sgpr_count: int | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None
    workgroup_size: int | None = None
    grid_size: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None

    @property
    def duration_ns(self) -> int | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        return self.end_ns - self.start_ns
