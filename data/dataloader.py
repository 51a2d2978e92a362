"""The sliding-window dataset and loader of Chapter 2.

A language model learns to predict the next token. From one long token sequence we
cut windows of ``max_length`` tokens; the target of each window is the same window
shifted one token to the right:

    tokens   40   367  2885  1464  1807 ...
    input   [40,  367, 2885, 1464]
    target       [367, 2885, 1464, 1807]

``stride`` is how far the window moves between samples: ``stride == max_length``
gives non-overlapping windows, ``stride == 1`` every possible window.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch.utils.data import DataLoader, Dataset

from .tokenizer import gpt2_tokenizer


class Tokenizer(Protocol):
    def encode(self, text: str, *, allowed_special: set[str] | str = ...) -> list[int]: ...


class GPTDatasetV1(Dataset):
    """(input, target) windows of ``max_length`` token ids, ``stride`` apart.

    Window i starts at token ``i * stride``; windows are taken for every start position
    ``s`` with ``s + max_length < len(tokens)``, so that each target (shifted by one)
    still fits. ``input_ids`` and ``target_ids`` are int64 tensors [num_windows, max_length].
    """

    def __init__(self, txt: str, tokenizer: Tokenizer, max_length: int, stride: int) -> None:
        if max_length < 1 or stride < 1:
            raise ValueError(f"max_length and stride must be >= 1, got {max_length} and {stride}")
        token_ids = torch.tensor(
            tokenizer.encode(txt, allowed_special={"<|endoftext|>"}), dtype=torch.long
        )
        if len(token_ids) <= max_length:
            raise ValueError(
                f"the text has {len(token_ids)} tokens; windows of max_length={max_length} "
                f"need at least {max_length + 1} (one extra for the shifted target)"
            )
        # unfold(0, size, step) lists every window of `size` elements, `step` apart, as
        # rows of a view: one tensor instead of thousands of small ones. Dropping the
        # last token from the inputs and the first from the targets keeps both aligned.
        self.input_ids = token_ids[:-1].unfold(0, max_length, stride)
        self.target_ids = token_ids[1:].unfold(0, max_length, stride)

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def __getitem__(self, idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.input_ids[idx], self.target_ids[idx]


def create_dataloader_v1(
    txt: str,
    batch_size: int = 4,
    max_length: int = 256,
    stride: int = 128,
    shuffle: bool = True,
    drop_last: bool = True,
    num_workers: int = 0,
) -> DataLoader:
    """A DataLoader of (inputs, targets) batches, each [batch_size, max_length] int64.

    Same defaults and meaning as the book. ``drop_last=True`` drops a final batch that
    would be smaller than ``batch_size`` (uneven batches make loss spikes in training).
    """
    dataset = GPTDatasetV1(txt, gpt2_tokenizer(), max_length, stride)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        num_workers=num_workers,
    )
