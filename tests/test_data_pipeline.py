"""Tokenizer, dataloader and the chapter-2 figures on the real story."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import attnkit_solutions as ref
from attnkit_data import GPTDatasetV1, create_dataloader_v1, gpt2_tokenizer


def test_tokenizer_is_gpt2_and_offline() -> None:
    tok = gpt2_tokenizer()
    assert tok.n_vocab == 50_257
    assert tok.encode("<|endoftext|>", allowed_special={"<|endoftext|>"}) == [50256]
    # The book's example sentence and its published ids.
    text = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
    ids = tok.encode(text, allowed_special={"<|endoftext|>"})
    assert ids == [
        15496,
        11,
        466,
        345,
        588,
        8887,
        30,
        220,
        50256,
        554,
        262,
        4252,
        18250,
        8812,
        2114,
        286,
        617,
        34680,
        27271,
        13,
    ]
    assert tok.decode(ids) == text


def test_ranks_are_tiktokens_own() -> None:
    """The ranks read off encoder.json alone are those tiktoken's loader builds from the
    merges and checks against encoder.json."""
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    from attnkit_data.tokenizer import bpe_files, mergeable_ranks

    encoder_json, vocab_bpe = bpe_files()
    ours = mergeable_ranks(encoder_json)
    assert len(ours) == 50_256
    assert ours == data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))


def test_verdict_encodes_to_5145_tokens(verdict_text: str) -> None:
    ids = gpt2_tokenizer().encode(verdict_text, allowed_special={"<|endoftext|>"})
    assert len(ids) == 5145
    assert ids[:4] == [40, 367, 2885, 1464]


def test_dataloader_book_figures(verdict_text: str) -> None:
    loader = create_dataloader_v1(verdict_text, batch_size=8, max_length=4, stride=4, shuffle=False)
    inputs, targets = next(iter(loader))
    assert inputs.shape == targets.shape == (8, 4)
    assert inputs.dtype == torch.long
    assert inputs[0].tolist() == [40, 367, 2885, 1464]
    assert targets[0].tolist() == [367, 2885, 1464, 1807]
    torch.testing.assert_close(targets[:, :-1], inputs[:, 1:])

    torch.manual_seed(123)
    token_embedding = nn.Embedding(50_257, 256)
    pos_embedding = nn.Embedding(4, 256)
    embeddings = token_embedding(inputs) + pos_embedding(torch.arange(4))
    assert embeddings.shape == (8, 4, 256)
    assert ref.SelfAttention_v1(256, 64)(embeddings).shape == (8, 4, 64)


def test_sliding_window_matches_the_book_loop(verdict_text: str) -> None:
    tok = gpt2_tokenizer()
    ids = tok.encode(verdict_text, allowed_special={"<|endoftext|>"})
    for max_length, stride in [(4, 1), (4, 4), (256, 128), (5, 3)]:
        dataset = GPTDatasetV1(verdict_text, tok, max_length, stride)
        starts = list(range(0, len(ids) - max_length, stride))  # the book's loop
        assert len(dataset) == len(starts)
        for idx in (0, len(starts) // 2, len(starts) - 1):
            x, y = dataset[idx]
            s = starts[idx]
            assert x.tolist() == ids[s : s + max_length]
            assert y.tolist() == ids[s + 1 : s + max_length + 1]


def test_drop_last_and_shuffle_semantics(verdict_text: str) -> None:
    kept = list(create_dataloader_v1(verdict_text, batch_size=7, max_length=4, stride=4))
    assert all(len(x) == 7 for x, _ in kept)
    every = list(
        create_dataloader_v1(verdict_text, batch_size=7, max_length=4, stride=4, drop_last=False)
    )
    assert sum(len(x) for x, _ in every) == 1286  # (5145 - 1 - 4) // 4 + 1 windows
    torch.manual_seed(0)
    shuffled = next(iter(create_dataloader_v1(verdict_text, batch_size=8, max_length=4, stride=4)))
    assert shuffled[0][0].tolist() != [40, 367, 2885, 1464]


def test_dataset_rejects_bad_arguments() -> None:
    tok = gpt2_tokenizer()
    with pytest.raises(ValueError, match="at least 5"):
        GPTDatasetV1("too short", tok, max_length=4, stride=1)
    with pytest.raises(ValueError, match=">= 1"):
        GPTDatasetV1("some text here", tok, max_length=4, stride=0)
