"""Wave file names (se<S>_sm<SIMD>_sl<SLOT>_wv<N>.json): the one pattern, light enough for the CLI start-up."""

from __future__ import annotations

import re

WAVE_FILE_RE = re.compile(r"^se(\d+)_sm(\d+)_sl(\d+)_wv(\d+)\.json$")
WAVE_FILE_GLOB = "se*_sm*_sl*_wv*.json"  # the same names, for Path.glob / fnmatch
