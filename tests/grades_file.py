"""A grades.json for the export tests, written as `attnkit grade` writes one."""

from __future__ import annotations

import json
from pathlib import Path

SLUG = "02_self_attention"


def gradebook(out: Path, records: list[dict]) -> Path:
    """``out/grades.json`` holding ``records`` of lesson 2 (14 points)."""
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "schema": "attnkit-grades/1",
        "assignments": {SLUG: {"title": "Self-attention in PyTorch", "max_score": 14.0}},
        "submissions": records,
    }
    (out / "grades.json").write_text(json.dumps(document))
    return out
