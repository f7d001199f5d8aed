"""atomic.json_text writes what ``json.dumps(obj, indent=2, allow_nan=False)`` writes, byte for byte,
whichever walk produced it (its own for the plain built-in types, json's for anything else)."""

from __future__ import annotations

import enum
import json
import random

import pytest

from kerneltrace import atomic


def _random_value(rng: random.Random, depth: int) -> object:
    kind = rng.randrange(10 if depth < 5 else 6)
    if kind == 0:
        return rng.choice(["", "a", 'quote " and \\ back', "tab\tnew\nline", "é ü 漢字 \U0001f600", "\x00\x1f"])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**64, -(2**70), 123456789])
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.5, 1e300, -2.5e-308, 0.1 + 0.2, 1e16, 123.0])
    if kind == 3:
        return rng.choice([None, True, False])
    if kind in (4, 5):
        return rng.choice(["x", 1, 2.0, None])
    if kind in (6, 7):
        return {rng.choice(["k", "", "é", 'q"', f"n{rng.randrange(99)}"]) + str(i): _random_value(rng, depth + 1)
                for i in range(rng.randrange(4))}
    items = [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return tuple(items) if kind == 8 else items


@pytest.mark.parametrize("seed", range(40))
def test_the_text_is_jsons_indented_dump(seed: int):
    value = _random_value(random.Random(seed), 0)
    assert atomic.json_text(value) == json.dumps(value, indent=2, allow_nan=False) + "\n"


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize("value", [
    {1: "int key", "s": [1, 2]}, {None: 1, True: 2, 1.5: 3}, [Level.HIGH, {"a": Level.HIGH}],
    {"nested": [[[]], {}, [{}]]}, [], {}, "top", 3, None,
], ids=["int-key", "odd-keys", "int-subclass", "empties", "empty-list", "empty-dict", "str", "int", "null"])
def test_values_left_to_json_come_out_as_json_writes_them(value: object):
    assert atomic.json_text(value) == json.dumps(value, indent=2, allow_nan=False) + "\n"


def test_a_type_json_refuses_is_still_refused():
    with pytest.raises(TypeError):
        atomic.json_text({"a": [1, object()]})


class Shade(enum.StrEnum):
    DARK = "dark \" é"


def test_str_subclasses_take_the_fast_walk_and_read_as_json_writes_them(monkeypatch):
    """A StrEnum (every hotspot document's `format`) is written as its text, as json does, by
    the fast walk itself: json's slower walk is not called."""
    value = {"format": Shade.DARK, "rows": [Shade.DARK, {"k": Shade.DARK}, (Shade.DARK,)]}
    expected = json.dumps(value, indent=2, allow_nan=False) + "\n"
    monkeypatch.setattr(atomic.json, "dumps", None)  # any call of it fails
    assert atomic.json_text(value) == expected
