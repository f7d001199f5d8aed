"""states.percentile is np.percentile's default (linear) method, float for float, and a --waves
analysis imports no numpy.ma (np.percentile's np.unique call would: ~8 ms a run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kerneltrace.analysis.waves.states import percentile


@pytest.mark.parametrize("q", [50, 90, 0, 100, 37.5])
def test_percentile_is_numpys_bit_for_bit(q):
    rng = np.random.default_rng(24)
    for size in [*range(1, 40), 97, 1000, 4112]:
        ints = rng.integers(0, 1 << 40, size)
        floats = ints / np.maximum(rng.integers(1, 1 << 20, size), 1)
        small = rng.integers(0, 5, size)  # ties
        for values in (ints, floats, small, -ints, floats - floats.mean()):
            expected = float(np.percentile(values, q))
            assert percentile(values, q) == expected, (size, values.dtype, q)
            assert repr(round(percentile(values, q), 4)) == repr(round(expected, 4))


def test_percentile_keeps_nan_as_numpy_does():
    values = np.array([1.0, np.nan, 3.0])
    assert np.isnan(percentile(values, 50)) and np.isnan(np.percentile(values, 50))


def test_a_waves_analysis_imports_no_masked_arrays(tmp_path):
    from kerneltrace.synth import demo_gemm, write_dispatch_dir

    directory = write_dispatch_dir(tmp_path / "d", demo_gemm("gfx942", iterations=4))
    code = ("import sys, pathlib\n"
            "from kerneltrace.analysis.waves.analyze import analyze_waves\n"
            "from kerneltrace.readers.codejson import read_code_json\n"
            f"d = pathlib.Path({str(directory)!r})\n"
            "waves = analyze_waves(d, read_code_json(d / 'code.json'), workers=1)\n"
            "assert waves['per_wave']['duration']['p90'] is not None\n"
            "print('numpy.ma' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"
