"""The nbgrader course's zip_collect reads who a download belongs to the way `attnkit grade`
does: ids survive whole, a name that says no one is reported, never guessed, and one
student's extra upload never stops anyone else's collection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.authoring.released import run_nbgrader, write_course_skeleton
from attnkit_autograder.platforms.course import collected_identity

ROOT = Path(__file__).resolve().parents[1]
SLUG = "02_self_attention"
ARCHIVE = Path("/course/downloaded") / SLUG / "archive"


@pytest.mark.parametrize(
    ("name", "student"),
    [
        (f"li_wei_{SLUG}.ipynb", "li_wei"),
        (f"li_ming_{SLUG}.ipynb", "li_ming"),
        (f"j.doe-2_{SLUG}.ipynb", "j.doe-2"),
        (f"zoë_{SLUG}.ipynb", "zoë"),
        (f"s12345_{SLUG}.ipynb", "s12345"),
        (f"smithjane_12345_67890_{SLUG}.ipynb", "smithjane"),  # Canvas
        ("smithjane_LATE_12345_67890_my work.ipynb", "smithjane"),  # Canvas, late
        ("HW2_jdoe_attempt_2024-03-02-09-30-00_nb.ipynb", "jdoe"),  # Blackboard
        ("Ada Lovelace_4242_assignsubmission_file_/my work.ipynb", "Ada Lovelace"),  # Moodle
    ],
)
def test_real_lms_download_names_keep_the_whole_id(name: str, student: str) -> None:
    identity = collected_identity(ARCHIVE / name, SLUG)
    assert identity is not None and identity[0] == student


@pytest.mark.parametrize(
    "name", [f"{SLUG}.ipynb", f"Copy of {SLUG}.ipynb", f"\x1b[2K_{SLUG}.ipynb"]
)
def test_a_name_that_says_no_one_is_not_guessed(name: str) -> None:
    assert collected_identity(ARCHIVE / name, SLUG) is None


ids = st.from_regex(r"[^\W_][\w.\-]{0,20}[^\W_]", fullmatch=True).filter(
    lambda s: SLUG not in s and "attempt" not in s
)


@settings(max_examples=200, deadline=None)
@given(ids)
@example("İİ")  # lowers to four characters: an index into the lowered name is off by two
def test_any_id_of_letters_digits_underscores_dots_and_hyphens_survives(student: str) -> None:
    identity = collected_identity(ARCHIVE / f"{student}_{SLUG}.ipynb", SLUG)
    assert identity is not None and identity[0] == student


@pytest.mark.slow
def test_nbgrader_zip_collect_keeps_every_student(tmp_path: Path) -> None:
    """li_wei and li_ming stay two students; an unsplittable name is skipped with a warning;
    a student's two uploads keep one (the later by time), and nobody's collection stops."""
    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    archive = course / "downloaded" / SLUG / "archive"
    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    for name in ("li_wei", "li_ming", "zoë", "li_wei_again"):
        write_notebook(notebook, archive / f"{name}_{SLUG}.ipynb")
    write_notebook(notebook, archive / f"li_wei-1_{SLUG}.ipynb")
    older = archive / f"lovelaceada_4242_1001_{SLUG}.ipynb"  # Canvas, first upload
    write_notebook(notebook, older)
    os.utime(older, (1_000_000, 1_000_000))
    newer = archive / f"lovelaceada_4242_1002_{SLUG}-1.ipynb"  # Canvas, the upload again
    write_notebook({**notebook, "metadata": {**notebook["metadata"], "newer": True}}, newer)
    write_notebook(notebook, archive / f"{SLUG}.ipynb")  # says no one
    done = run_nbgrader(course, "zip_collect", SLUG)
    submitted = sorted(p.name for p in (course / "submitted").iterdir())
    assert submitted == sorted(
        ["li_wei", "li_ming", "zoë", "li_wei_again", "li_wei-1", "lovelaceada"]
    )
    assert "cannot tell which student" in done.stdout + done.stderr
    assert (course / "submitted" / "lovelaceada" / SLUG / f"{SLUG}.ipynb").is_file()
