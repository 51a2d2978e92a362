"""The per-student feedback report: self-contained, safe, informative, and it renders.

A correct, a buggy (a catalogued mistake plus a message trying to inject HTML) and a
broken submission are graded with --feedback; each report is checked as text and then
opened in headless Chromium with every network lookup refused. Screenshots go to
artifacts/ for CI to keep.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import chromium_flags

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.feedback import write_feedback
from attnkit_autograder.classes.results import result_paths, storage_name, write_gradebook
from attnkit_autograder.classes.supervisor import grade_all
from attnkit_autograder.grading.catalogue import mistakes_for
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
SLUG = "03_causal_attention"
pytestmark = pytest.mark.slow
INJECTION = "<script>alert('x')</script>"
MISTAKE = next(
    m for m in mistakes_for(SLUG, "ScaledDotProductAttention") if m.id == "mask_after_softmax"
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("feedback")
    released = released_notebook(SLUG, ROOT / "assignments")
    write_notebook(fill_notebook(released, SLUG), tmp / "subs" / f"correct_{SLUG}.ipynb")
    buggy = fill_notebook(
        released,
        SLUG,
        {
            "ScaledDotProductAttention": MISTAKE.code,
            "causal_mask": f"raise ValueError({INJECTION!r})",
        },
    )
    write_notebook(buggy, tmp / "subs" / f"buggy_{SLUG}.ipynb")
    (tmp / "subs" / f"broken_{SLUG}.ipynb").write_text('{"cells": [}')
    out = tmp / "out"
    grade_all(discover(tmp / "subs"), out, GradeSettings(GradeOptions(feedback=True)), jobs=2)
    write_gradebook(out, result_paths(out))
    write_feedback(out)
    return {
        who: out / "feedback" / storage_name(who) / SLUG for who in ("correct", "buggy", "broken")
    }


def test_reports_and_summaries_exist_for_every_submission(reports) -> None:
    for base in reports.values():
        assert base.with_suffix(".html").is_file() and base.with_suffix(".txt").is_file()


def test_reports_load_nothing_from_anywhere(reports) -> None:
    for base in reports.values():
        page = base.with_suffix(".html").read_text()
        assert "<script" not in page and "<link" not in page and "url(" not in page
        assert not re.search(r"\s(src|href)=", page)
        assert "https://" not in page
        assert set(re.findall(r"http://[^\"' ]+", page)) <= {"http://www.w3.org/2000/svg"}


def test_buggy_report_names_the_mistake_escapes_text_and_hides_tests(reports) -> None:
    page = reports["buggy"].with_suffix(".html").read_text()
    assert MISTAKE.title in page and "Looks like a classic mistake" in page
    assert INJECTION not in page and "&lt;script&gt;" in page
    suite = (ROOT / "autograder" / "lessons" / f"l{SLUG}" / "hidden_tests.py").read_text()
    for line in suite.splitlines():
        line = line.strip()
        if len(line) > 30 and not line.startswith(("#", '"""', "from ", "import ")):
            assert line not in page, f"hidden test source leaked: {line}"
    # The colour scale and the reference's map; the student's pipeline failed in their own
    # causal_mask, so their map is replaced by the reason, escaped.
    assert page.count("<svg") == 2 and "Your weights for" in page and "not available" in page
    text = reports["buggy"].with_suffix(".txt").read_text()
    assert MISTAKE.title in text and text.startswith("Causal attention: ")


def test_correct_and_broken_reports(reports) -> None:
    correct = reports["correct"].with_suffix(".html").read_text()
    assert "Score: <b>12</b> of 12" in correct and "classic mistake" not in correct
    assert correct.count("<svg") == 3  # the colour scale, the student's map, the reference's
    broken = reports["broken"].with_suffix(".html").read_text()
    assert "could not be graded" in broken and "not valid notebook JSON" in broken
    assert "<svg" not in broken


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    chromium() is None and not os.environ.get("CI"),
    reason="Chromium is not installed (.ci/run installs it)",
)
@pytest.mark.parametrize("who", ["correct", "buggy", "broken"])
def test_reports_render_in_a_headless_browser_without_network(reports, who, tmp_path) -> None:
    browser = chromium()
    assert browser is not None, "CI must have Chromium: .ci/run installs it"
    ARTIFACTS.mkdir(exist_ok=True)
    page = reports[who].with_suffix(".html").as_uri()
    flags = chromium_flags(str(tmp_path / "profile"))
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=120
    )
    assert "Score:" in dom.stdout and "feedback for" in dom.stdout
    if who != "broken":
        assert "Your weights" in dom.stdout and "<rect" in dom.stdout
    shot = ARTIFACTS / f"feedback-{who}.png"
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", page], capture_output=True, timeout=120
    )
    assert shot.is_file() and shot.stat().st_size > 20_000
