"""Shared fixtures for the kit's own tests."""

from __future__ import annotations

import pytest
import torch

# "Your journey starts with one step": the book's six 3-d embeddings.
BOOK_INPUTS = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]


@pytest.fixture
def book_inputs() -> torch.Tensor:
    return torch.tensor(BOOK_INPUTS)


@pytest.fixture(scope="session")
def verdict_text() -> str:
    from attnkit_data import read_verdict

    return read_verdict()
