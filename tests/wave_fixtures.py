"""A small hand-written V3 wave file (docs/rocprof-outputs.md §8.9) shared by the wave-reader tests."""

WAVE = {
    "duration": 5584, "name": "SE0", "num_insts": 3, "num_stitched": 3,
    "wave": {"begin": 70088, "cu": 1, "end": 75672, "id": 0,
             "instructions": [[70120, 1, 0, 4, 1], [70140, 9, 920, 920, 6], [71100, 6, 0, 8, 7]],
             "simd": 2, "slot": 1,
             "timeline": [[1, 32], [2, 20], [3, 920]],
             "waitcnt": [[6, [[1, 0], [2, 0], [3, 0]]], [18, [[13, 0], [14, 0]]], [20, []]]},
}
