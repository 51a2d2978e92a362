"""The shipped mistake fingerprints: current on any CPU, never rewritten for float noise.

A float32 matmul's last bits differ between CPUs, so fingerprints computed on another
machine differ from the committed ones by about 1e-8. ``attnkit generate --check`` must
pass on that machine, ``attnkit generate`` must leave the committed file alone there,
and a real change (a value, a message, a missing mistake) must still be caught.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnkit.diagnosis import FINGERPRINTS
from attnkit.student_process.wire import decode, encode
from attnkit_autograder.authoring.fingerprints import (
    equivalent,
    fingerprint_bytes,
    stale,
    write_fingerprints,
)


def perturbed(value: Any, scale: float, only_first: bool = False) -> Any:
    """``value`` with every float array moved by ``scale`` relative (the first only)."""
    done = [False]

    def walk(item: Any) -> Any:
        if isinstance(item, np.ndarray) and item.dtype.kind == "f" and item.size:
            if only_first and done[0]:
                return item
            done[0] = True
            finite = np.isfinite(item)
            moved = item.copy()
            moved[finite] = (item[finite] * (1 + scale) + scale).astype(item.dtype)
            return moved
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)


@pytest.fixture(scope="module")
def fresh() -> bytes:
    return fingerprint_bytes()


def test_the_committed_fingerprints_are_current(fresh: bytes) -> None:
    assert equivalent(FINGERPRINTS.read_bytes(), fresh)
    assert stale() == []


def test_float_noise_of_another_cpu_is_not_a_difference(fresh: bytes) -> None:
    noisy = encode(perturbed(decode(fresh), 2e-7))
    assert noisy != fresh
    assert equivalent(noisy, fresh)


def test_a_real_change_is_a_difference(fresh: bytes) -> None:
    data = decode(fresh)
    assert not equivalent(encode(perturbed(data, 0.05, only_first=True)), fresh)
    renamed = {
        **data,
        "mistakes": [{**data["mistakes"][0], "message": "other"}, *data["mistakes"][1:]],
    }
    assert not equivalent(encode(renamed), fresh)
    shorter = {**data, "mistakes": data["mistakes"][1:]}
    assert not equivalent(encode(shorter), fresh)
    assert not equivalent(b"not a message", fresh)


def test_generate_leaves_an_equivalent_file_alone_and_rewrites_a_stale_one(
    tmp_path: Path, fresh: bytes
) -> None:
    target = tmp_path / FINGERPRINTS.name
    shutil.copy(FINGERPRINTS, target)
    noisy = encode(perturbed(decode(fresh), 2e-7))
    target.write_bytes(noisy)
    write_fingerprints(target)
    assert target.read_bytes() == noisy  # another CPU's regeneration changes nothing
    assert stale(target) == []

    target.write_bytes(encode(perturbed(decode(fresh), 0.05, only_first=True)))
    assert stale(target) != []
    write_fingerprints(target)
    assert stale(target) == []
