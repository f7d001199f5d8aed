"""Group: a group of waves concatenated once into per-instruction columns and per-wave scalars."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.readers.wavefile.record import WaveFile


@dataclass
class Group:
    """A group of waves concatenated once: per-instruction columns and per-wave scalars.

    Every whole-group pass (plausibility, sums, states, waitcnt attribution, loops) works on
    these arrays; instruction i of the group belongs to wave `owner[i]`, whose instructions are
    `start[w]:start[w] + lengths[w]`.
    """

    waves: list[WaveFile]
    lengths: np.ndarray  # instructions per wave
    start: np.ndarray  # first instruction of each wave in the group arrays
    owner: np.ndarray  # wave index of each instruction
    time: np.ndarray
    category: np.ndarray
    stall: np.ndarray
    duration: np.ndarray
    line: np.ndarray
    begin: np.ndarray  # per wave
    end: np.ndarray  # per wave
    timeline: np.ndarray  # (state, duration) rows of all waves
    timeline_lengths: np.ndarray  # timeline rows per wave
    wait_entries: np.ndarray  # waitcnt entries per wave
    wait_rows: np.ndarray  # code row of each waitcnt entry
    wait_offsets: np.ndarray  # each wave's CSR offsets (entries + 1 each), end to end
    wait_producers: np.ndarray  # producer row of each (entry, producer) pair

    @classmethod
    def of(cls, waves: list[WaveFile]) -> Group:
        import numpy as np

        count = len(waves)
        lengths = np.fromiter((len(wave.instructions) for wave in waves), np.int64, count)
        start = np.zeros(count, np.int64)
        np.cumsum(lengths[:-1], out=start[1:])
        if lengths.sum():
            # one transposing copy: five contiguous columns are faster in every later pass
            columns = np.concatenate([wave.instructions for wave in waves]).T.copy()
        else:
            columns = np.zeros((5, 0), np.int64)
        owner = np.repeat(np.arange(count), lengths)
        begin = np.fromiter((wave.begin for wave in waves), np.int64, count)
        end = np.fromiter((wave.end for wave in waves), np.int64, count)

        def joined(arrays: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.zeros(shape, np.int64)

        return cls(
            waves, lengths, start, owner, *columns, begin, end,
            timeline=joined([wave.timeline for wave in waves], (0, 2)),
            timeline_lengths=np.fromiter((len(wave.timeline) for wave in waves), np.int64, count),
            wait_entries=np.fromiter((len(wave.waitcnt_lines) for wave in waves), np.int64, count),
            wait_rows=joined([wave.waitcnt_lines for wave in waves], (0,)),
            wait_offsets=joined([wave.waitcnt_offsets for wave in waves], (0,)),
            wait_producers=joined([wave.waitcnt_producers[:, 0] for wave in waves], (0,)),
        )
