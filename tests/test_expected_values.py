"""The values lesson 1's visible checks expect are PyTorch's, kept as data: checking lesson 1
never loads PyTorch, and the kept data is checked against a fresh computation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.selfcheck import oracle
from attnkit.selfcheck.oracle import EXPECTED_VALUES, StaleExpectedValues, expected
from attnkit_autograder.authoring import expected_values
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"


def test_checking_lesson_1_never_loads_pytorch(tmp_path: Path) -> None:
    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    path = write_notebook(notebook, tmp_path / f"{SLUG}.ipynb")
    probe = (
        "import sys\nfrom attnkit.cli import run\n"
        f"code = run(['check', '1', '--notebook', {str(path)!r}])\n"
        "print('exit', code, 'torch loaded', 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "exit 0 torch loaded False" in done.stdout, done.stdout + done.stderr


def test_the_kept_values_are_current() -> None:
    assert expected_values.stale() == []


def test_a_changed_or_missing_value_is_stale(tmp_path: Path) -> None:
    kept = json.loads(EXPECTED_VALUES.read_text(encoding="utf-8"))
    changed = tmp_path / "changed.json"
    first = next(iter(kept))
    kept[first]["values"][0] += 1e-6
    changed.write_text(json.dumps(kept))
    assert expected_values.stale(changed) == [f"{changed} does not match the visible checks"]
    assert expected_values.stale(tmp_path / "none.json")


def test_a_value_the_data_lacks_is_a_clear_refusal(monkeypatch) -> None:
    monkeypatch.setattr(oracle, "_kept", lambda: {})
    with pytest.raises(StaleExpectedValues, match="has no expected value 'softmax_values'"):
        expected("softmax_values", lambda: 0.0)
