"""namematch agrees with fnmatch on star patterns (the bundle's CSV kinds, wave files) and hands others to it."""

from __future__ import annotations

import fnmatch

from hypothesis import given
from hypothesis import strategies as st

from kerneltrace.namematch import name_matches, names_matching

PATTERNS = ["*kernel_trace*.csv", "*agent_info*.csv", "*counter_collection.csv", "pass_*",
            "se*_sm*_sl*_wv*.json", "*", "**", "a*a", "aa*aa", "*a*a*", "exact.csv", "", "x?y", "[ab]*"]
NAMES = ["kernel_trace.csv", "discover_kernel_trace.csv", "kernel_trace.csv.bak", "kernel_tracecsv",
         "big_agent_info.csv", "agent_info.csv", ".csv", "pass_1", "pass_", "apass_1",
         "se0_sm1_sl2_wv3.json", "se_sm_sl_wv.json", "se0_sm1_wv3_sl2.json", "se0_sm1_sl2_wv3.json.tmp",
         "a", "aa", "aaa", "aaaa", "aaaaa", "aXa", "exact.csv", "", "xzy", "b1"]


def test_listed_patterns_and_names_agree_with_fnmatch():
    for pattern in PATTERNS:
        for name in NAMES:
            assert name_matches(name, pattern) == fnmatch.fnmatchcase(name, pattern), (name, pattern)
        assert names_matching(NAMES, pattern) == fnmatch.filter(NAMES, pattern)


@given(st.text("ab*._", max_size=8), st.text("ab._", max_size=10))
def test_any_star_pattern_agrees_with_fnmatch(pattern: str, name: str):
    assert name_matches(name, pattern) == fnmatch.fnmatchcase(name, pattern)
