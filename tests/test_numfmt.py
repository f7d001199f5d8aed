"""kerneltrace.numfmt.percent: the one percentage formatter, in each spelling its callers use."""

from __future__ import annotations

import pytest

from kerneltrace.numfmt import percent


@pytest.mark.parametrize("kwargs, expected", [
    ({}, "12.3%"),
    ({"digits": 0}, "12%"),
    ({"sign": True}, "+12.3%"),
    ({"width": 5}, " 12.3%"),
    ({"sep": " "}, "12.3 %"),
])
def test_spellings(kwargs, expected):
    assert percent(0.1234, **kwargs) == expected


def test_not_a_number_is_the_missing_text():
    assert percent(None) == "n/a"
    assert percent(None, sign=True, missing="new") == "new"
    assert percent("0.5") == "n/a" and percent(True) == "n/a"


def test_same_rounding_as_python_percent_format():
    for value in (0.005, 0.0049999, 0.125, 0.135, -0.0349, 0.99951, 2.5):
        assert percent(value, 0) == f"{value:.0%}"
        assert percent(value, sign=True) == f"{value:+.1%}"
