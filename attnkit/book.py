"""Inputs published in "Build a Large Language Model from Scratch", chapter 3.

"Your journey starts with one step": six tokens with made-up 3-dimensional embeddings.
The lessons, the visible checks, the hidden suites and the kit's tests all use these.
"""

from __future__ import annotations

import numpy as np

BOOK_INPUTS = np.array(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ],
    dtype=np.float32,
)
