"""spaces: sampling, membership and the dict round trip used by the model file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from drla_core.base.spaces import Box, Discrete, space_from_dict

SPACES = [
    Box(-1.0, 1.0, (3,)),
    Box(0.0, 1.0, (2, 4)),
    Box(-np.inf, np.inf, (5,)),
    Box([0.0, -np.inf, -2.0], [1.0, 0.0, np.inf]),
    Box(-5, 5, (2,), dtype=np.float64),
    Discrete(1),
    Discrete(8, ["move_right", "move_left", "move_front", "move_back", "wait", "canon_up", "canon_down", "fire"]),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_samples_are_contained_and_seeded(space) -> None:
    rng = np.random.default_rng(0)
    samples = [space.sample(rng) for _ in range(200)]
    assert all(space.contains(x) for x in samples)
    again = [space.sample(np.random.default_rng(0)) for _ in range(1)]
    assert np.array_equal(np.asarray(samples[0]), np.asarray(again[0]))


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_to_dict_round_trip_through_json(space) -> None:
    d = space.to_dict()
    back = space_from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back == space and back.to_dict() == d


def test_box_contains() -> None:
    box = Box(-1.0, 1.0, (2,))
    assert box.contains(np.array([0.5, -1.0], dtype=np.float32))
    assert box.contains([0.0, 0.0])
    assert np.array([0.0, 0.0], dtype=np.float32) in box
    assert not box.contains(np.array([0.0, 1.5], dtype=np.float32))
    assert not box.contains(np.zeros(3, dtype=np.float32))
    assert not box.contains(np.zeros((2, 1), dtype=np.float32))
    assert not box.contains("ab")
    assert box.shape == (2,) and box.size == 2 and box.dtype == np.float32


def test_box_sample_distributions() -> None:
    rng = np.random.default_rng(1)
    half = Box([0.0, -np.inf], [np.inf, 3.0])
    xs = np.array([half.sample(rng) for _ in range(500)])
    assert xs.dtype == np.float32 and (xs[:, 0] >= 0).all() and (xs[:, 1] <= 3).all()
    bounded = np.array([Box(2.0, 4.0, (1,)).sample(rng) for _ in range(500)])
    assert 2.0 <= bounded.min() and bounded.max() <= 4.0 and abs(bounded.mean() - 3.0) < 0.1


def test_box_errors_and_infinite_bounds_as_null() -> None:
    with pytest.raises(ValueError, match="low must be <= high"):
        Box(1.0, 0.0, (2,))
    d = Box(-np.inf, np.inf, (2,)).to_dict()
    assert d["low"] is None and d["high"] is None


def test_discrete() -> None:
    d = Discrete(3, ["a", "b", "c"])
    assert d.contains(0) and d.contains(np.int64(2)) and d.contains(np.array(1))
    assert not d.contains(3) and not d.contains(-1) and not d.contains(1.0) and not d.contains(True)
    assert not d.contains(np.array([1])) and not d.contains(np.array(1.0))
    assert Discrete(2).names == ["action_0", "action_1"]
    assert d.to_dict() == {"type": "discrete", "n": 3, "names": ["a", "b", "c"]}
    assert d != Discrete(3) and d == Discrete(3, ["a", "b", "c"])
    with pytest.raises(ValueError):
        Discrete(0)
    with pytest.raises(ValueError, match="2 names for 3 actions"):
        Discrete(3, ["a", "b"])


def test_space_from_dict_rejects_unknown_types() -> None:
    with pytest.raises(ValueError, match="unknown space type 'tuple'"):
        space_from_dict({"type": "tuple"})
