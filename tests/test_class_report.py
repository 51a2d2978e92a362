"""`attnkit report`: one self-contained page about a class, what an instructor takes to the
next lecture; student text escaped; a class of 300 in seconds; readable in a browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import chromium_flags

SLUG = "02_self_attention"
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
CELLS = ["test_softmax_values", "test_softmax_stability", "test_v1_forward"]


def graded_cell(grade_id: str, passed: bool, mistake: str | None = None) -> dict:
    return {
        "grade_id": grade_id, "exercise": "x", "status": "passed" if passed else "failed",
        "points": 1.0 if passed else 0.0, "max_points": 1.0, "hint": None,
        "message": "" if passed else f"wrong values in {grade_id}",
        "diagnosis": {"id": mistake, "title": mistake, "symptom": "s"} if mistake else None,
    }  # fmt: skip


def class_of(out: Path, size: int) -> Path:
    """size students: every third forgets the max-subtraction (stability fails), every fifth
    fails v1_forward unnamed, student 7 (whose name is markup) could not be graded."""
    records = []
    for i in range(size):
        name = "<script>alert(1)</script>" if i == 7 else f"s{i:03d}"
        if i == 7:
            records.append({"student": name, "assignment": SLUG, "status": "error", "score": 0.0,
                            "max_score": 3.0, "error": "not valid notebook JSON", "source": "x",
                            "tests": []})  # fmt: skip
            continue
        tests = [
            graded_cell(CELLS[0], True),
            graded_cell(CELLS[1], i % 3 != 0, None if i % 3 else "no max-subtraction"),
            graded_cell(CELLS[2], i % 5 != 0),
        ]
        score = sum(t["points"] for t in tests)
        records.append({
            "student": name, "assignment": SLUG, "status": "graded", "score": score,
            "max_score": 3.0, "error": None, "source": "x", "tests": tests,
        })  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "schema": "attnkit-grades/1",
        "assignments": {SLUG: {"title": "Self-attention in PyTorch", "max_score": 3.0}},
        "submissions": records,
    }
    (out / "grades.json").write_text(json.dumps(document))
    return out


def report(out: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", "report", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return (out / "report.html").read_text()


def test_the_report_says_what_to_take_to_the_next_lecture(tmp_path) -> None:
    page = report(class_of(tmp_path / "out", 30))
    # Pass rates, weakest first: stability (19/29 pass) before v1_forward (23/29) before values.
    order = [page.index(f"<td>{cell}</td>") for cell in (CELLS[1], CELLS[2], CELLS[0])]
    assert order == sorted(order)
    assert "19/29 (66%)" in page and "23/29 (79%)" in page and "29/29 (100%)" in page
    # The named mistake, with its share of the class and an example message.
    assert "10 (34% of the class)" in page and "no max-subtraction" in page
    assert "wrong values in test_softmax_stability" in page
    # Who could not be graded, and why; a hostile name is text, not markup.
    assert "not valid notebook JSON" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained


def test_a_class_of_300_renders_in_seconds(tmp_path) -> None:
    out = class_of(tmp_path / "out", 300)
    start = time.monotonic()
    page = report(out)
    print(f"report of 300: {time.monotonic() - start:.2f} s, {len(page) // 1024} KiB")
    assert "Class report: 300 submission(s)" in page


@pytest.mark.skipif(
    shutil.which("chromium") is None and not os.environ.get("CI"),
    reason="Chromium is not installed (.ci/run installs it)",
)
def test_the_report_renders_in_a_headless_browser(tmp_path) -> None:
    out = class_of(tmp_path / "out", 40)
    report(out)
    browser = shutil.which("chromium")
    assert browser is not None, "CI must have Chromium: .ci/run installs it"
    flags = chromium_flags(str(tmp_path / "profile"), window="1100,1500")
    page = (out / "report.html").as_uri()
    dom = subprocess.run([browser, *flags, "--dump-dom", page], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert "Named mistakes" in dom.stdout and "<rect" in dom.stdout
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "class-report.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", page], capture_output=True,
                   timeout=120)  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 20_000


def test_odd_rows_and_scales_do_not_break_the_page(tmp_path) -> None:
    out = class_of(tmp_path / "out", 5)
    document = json.loads((out / "grades.json").read_text())
    document["assignments"][SLUG]["max_score"] = 200_000.0
    (out / "grades.json").write_text(json.dumps(document))
    page = report(out)
    assert page.count("<rect") <= 51 and len(page) < 200_000
    document["submissions"][0]["assignment"] = None  # graded, of no known assignment
    (out / "grades.json").write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-m", "attnkit", "report", str(out)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and "submission row 1 is malformed" in done.stderr
    assert "Traceback" not in done.stderr
