"""Synthetic tasks whose right attention pattern is known in advance (lesson 5).

``repeated_segments`` makes sequences of a random segment repeated until the sequence is
full. After its first occurrence every token is predictable, by an *induction* circuit:
find the previous occurrence of the current token, copy the token that followed it. The
segment's length varies from sequence to sequence, so "look back a fixed number of tokens"
does not work, and a model has to learn the circuit.
"""

from __future__ import annotations

import torch


def repeated_segments(
    batch_size: int,
    generator: torch.Generator,
    vocab_size: int = 32,
    length: int = 33,
    shortest: int = 4,
    longest: int = 11,
) -> torch.Tensor:
    """Token ids [batch_size, length], int64: in each row, a random segment of ``shortest``
    to ``longest`` tokens (uniform), repeated and cut to ``length``."""
    rows = []
    for _ in range(batch_size):
        size = int(torch.randint(shortest, longest + 1, (1,), generator=generator))
        segment = torch.randint(0, vocab_size, (size,), generator=generator)
        rows.append(segment.repeat(length // size + 1)[:length])
    return torch.stack(rows)
