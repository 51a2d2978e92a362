"""The exercise table is generated, and the fairness corpus states only its own answers.

Each exercise is declared once, on its reference (``@exercise``); ``attnkit generate``
writes ``attnkit/registry_data.py`` and README.md's lesson table from the declarations, and
``attnkit generate --check`` fails when either is stale. No test here writes into the
checkout: stale copies are planted under ``tmp_path``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from attnkit import cli
from attnkit.assignments import ASSIGNMENTS
from attnkit.errors import KitError
from attnkit_autograder.authoring import command_reference, fingerprints, registry, released
from attnkit_solutions import exercises

CORPUS = Path(__file__).resolve().parent / "corpus" / "fair"
sys.path.insert(0, str(CORPUS))

import builder  # noqa: E402

SLUG = "03_causal_attention"


def test_the_committed_table_and_lesson_table_are_current() -> None:
    assert registry.stale() == []


def test_the_table_lists_each_lesson_in_notebook_order() -> None:
    assert [e.name for e in ASSIGNMENTS[SLUG].exercises] == registry.solution_cells(SLUG)
    masking = ASSIGNMENTS[SLUG].exercise("apply_causal_mask")
    assert masking.uses == ("causal_mask",)
    assert "torch.nn.MultiheadAttention" in ASSIGNMENTS[SLUG].exercise("CausalAttention").forbidden


@pytest.fixture
def only_the_registry_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """``attnkit generate --check`` with the slow checks (nbgrader, fingerprints) passing."""
    monkeypatch.setattr(released, "released_differences", lambda out: [])
    monkeypatch.setattr(fingerprints, "stale", lambda: [])
    monkeypatch.setattr(command_reference, "stale", lambda: [])


def planted_copy(tmp_path: Path, old: str, new: str) -> Path:
    text = registry.TABLE.read_text(encoding="utf-8")
    assert old in text
    copy = tmp_path / "registry_data.py"
    copy.write_text(text.replace(old, new, 1), encoding="utf-8")
    return copy


@pytest.mark.usefixtures("only_the_registry_checked")
def test_generate_check_fails_on_a_stale_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["generate", "--check"]) == 0
    capsys.readouterr()
    stale = planted_copy(tmp_path, '"masked_fill the future with -inf"', '"hand-edited"')
    monkeypatch.setattr(registry, "TABLE", stale)
    assert cli.main(["generate", "--check"]) == 1
    out, err = capsys.readouterr()
    assert f"{stale}: the exercise table differs from the references' declarations" in out
    assert "run `attnkit generate`" in err


@pytest.mark.usefixtures("only_the_registry_checked")
def test_generate_check_fails_when_a_declaration_changes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = (SLUG, "apply_causal_mask")
    changed = dataclasses.replace(exercises.DECLARED[key], task="a new task line")
    monkeypatch.setitem(exercises.DECLARED, key, changed)
    assert cli.main(["generate", "--check"]) == 1
    assert "the exercise table differs" in capsys.readouterr().out


def test_write_rewrites_a_stale_copy_once(tmp_path: Path) -> None:
    stale = planted_copy(tmp_path, '"apply_causal_mask"', '"apply_mask"')
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{registry.START}\nold rows\n{registry.END}\nrest\n")
    assert registry.stale(stale, readme) != []
    assert registry.write(stale, readme) == [stale, readme]
    assert stale.read_text(encoding="utf-8") == registry.TABLE.read_text(encoding="utf-8")
    assert "| `assignments/03_causal_attention` | Causal attention |" in readme.read_text()
    assert registry.stale(stale, readme) == []
    assert registry.write(stale, readme) == []


def test_a_solution_cell_without_a_declaration_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(exercises.DECLARED, (SLUG, "apply_causal_mask"))
    with pytest.raises(KitError, match=r"solution cell 'apply_causal_mask' has no reference"):
        registry.render()


def test_a_declaration_without_a_solution_cell_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    key = (SLUG, "no_such_exercise")
    ghost = exercises.Declaration(SLUG, key[1], "t", (), (), "scaled_dot_product:ghost")
    monkeypatch.setitem(exercises.DECLARED, key, ghost)
    with pytest.raises(KitError, match=r"'no_such_exercise' in 03_causal_attention, whose"):
        registry.render()


def test_uses_must_name_an_earlier_exercise(monkeypatch: pytest.MonkeyPatch) -> None:
    key = (SLUG, "causal_mask")
    wrong = dataclasses.replace(exercises.DECLARED[key], uses=("CausalAttention",))
    monkeypatch.setitem(exercises.DECLARED, key, wrong)
    with pytest.raises(KitError, match=r"uses 'CausalAttention', which is no earlier exercise"):
        registry.render()


# -- the fairness corpus: stubs a file does not mention get the reference -----------------------


def test_defined_names_are_the_top_level_bindings() -> None:
    text = (
        "def causal_mask(n):\n    softmax = 1\n"
        "class CausalAttention(CausalAttention):\n    pass\n"
        "ScaledDotProductAttention.forward = f\n"
        "from helper import (apply_causal_mask, x as y)\n"
        "if a == b:\n    pass\n"
    )
    assert builder.defined_names(text) == {
        "causal_mask", "CausalAttention", "ScaledDotProductAttention", "apply_causal_mask",
        "x", "y",
    }  # fmt: skip


def write_corpus_file(tmp_path: Path, edits: str) -> Path:
    folder = tmp_path / SLUG
    folder.mkdir()
    path = folder / "one_answer.py"
    path.write_text(f'STORY = "x"\nPATTERNS = []\nSAVE = {{}}\nEDITS = {edits}\n')
    return path


def test_a_file_that_fills_one_stub_gets_the_references_for_the_rest(tmp_path: Path) -> None:
    path = write_corpus_file(
        tmp_path, '[("fill", "causal_mask", "return torch.ones(n, n).triu(1).bool()")]'
    )
    built = builder.build(path)
    others = [e.name for e in ASSIGNMENTS[SLUG].exercises if e.name != "causal_mask"]
    assert built.filled == tuple(others)
    code = "\n".join(built.code_cells())
    assert builder.STUB[1] not in code
    assert "return torch.ones(n, n).triu(1).bool()" in code
    # The reference answers are the baseline, not the student's own code.
    own = "".join(built.student_code())
    assert own.strip() == "return torch.ones(n, n).triu(1).bool()"


def test_an_answer_in_a_new_cell_keeps_its_stub(tmp_path: Path) -> None:
    below = '"def apply_causal_mask(scores):\\n    return scores"'
    path = write_corpus_file(tmp_path, f'[("below", "test_apply_causal_mask", {below})]')
    built = builder.build(path)
    assert "apply_causal_mask" not in built.filled
    assert "causal_mask" in built.filled
    stubs = [s for s in built.code_cells() if builder.STUB[1] in s]
    assert len(stubs) == 1 and "def apply_causal_mask(" in stubs[0]


def test_a_file_that_mentions_nothing_is_the_reference_notebook(tmp_path: Path) -> None:
    built = builder.build(write_corpus_file(tmp_path, "[]"))
    assert built.filled == tuple(e.name for e in ASSIGNMENTS[SLUG].exercises)
    assert built.notebook == built.base
    assert builder.STUB[1] not in "\n".join(built.code_cells())
