"""The attention patterns of a trained tiny transformer, kept for lesson 5's hidden tests.

The head detectors are graded on fixed patterns and on real ones: those of the lesson's own
model, trained as the notebook trains it (the reference ``train_step``, 2,000 steps of
repeated segments), on three samples whose segment of 5, 8 or 11 tokens appears twice.
The patterns ship with the kit (``heads_checkpoint.npz`` beside this file, about 8 KB), checked by
the SHA-256 below; nothing is downloaded. Regenerate them, and the digest, with

    python -m attnkit_autograder.lessons.l05_watch_attention_learn.checkpoint

(the last bits of a trained model differ between CPUs: regenerating on another machine
gives another, equally good file, and a new digest to pin).
"""

from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path

import numpy as np

CHECKPOINT = Path(__file__).resolve().parent / "heads_checkpoint.npz"
CHECKPOINT_SHA256 = "4c619cbfedf35be3f792ee42e97bfeda610940449b88a6add67feb08b0dedb1c"
PERIODS = (5, 8, 11)
"""The segment lengths of the samples: each sample is its segment shown twice."""


def train_patterns(steps: int = 2000) -> dict[str, np.ndarray]:
    """Train the reference model as the notebook does; its weights on each sample,
    ``period_P``: [layers, heads, 2P, 2P] float32."""
    import torch

    from attnkit_data import repeated_segments
    from attnkit_solutions.tiny_transformer import TinyTransformer, train_step

    torch.manual_seed(0)
    model = TinyTransformer(32, 64, 32, 2, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(2026)
    model.train()
    for _ in range(steps):
        ids = repeated_segments(32, generator, 32, 33)
        train_step(model, optimizer, ids[:, :-1], ids[:, 1:])
    model.eval()
    patterns = {}
    for period in PERIODS:
        segment = torch.randint(0, 32, (period,), generator=torch.Generator().manual_seed(period))
        with torch.no_grad():
            model(segment.repeat(2)[None])
        layers = [block.last_weights[0].numpy() for block in model.blocks]
        patterns[f"period_{period}"] = np.stack(layers).astype(np.float32)
    return patterns


def load_patterns(
    path: Path = CHECKPOINT, digest: str = CHECKPOINT_SHA256
) -> dict[str, np.ndarray]:
    """The kept patterns, refused unless the file is the one whose digest is pinned."""
    data = path.read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != digest:
        raise RuntimeError(f"{path} has SHA-256 {found}, not the pinned {digest}")
    with np.load(io.BytesIO(data)) as archive:
        return {name: archive[name] for name in archive.files}


def main() -> int:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **train_patterns())
    CHECKPOINT.write_bytes(buffer.getvalue())
    print(f"wrote {CHECKPOINT} ({len(buffer.getvalue()):,} bytes)")
    print(f'pin it: CHECKPOINT_SHA256 = "{hashlib.sha256(buffer.getvalue()).hexdigest()}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
