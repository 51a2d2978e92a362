"""The class tools' acceptance class: README.md's "class of 40" block, run line by line as
written, then every outcome checked: the grades under the late policy (against a table
worked out by hand), per-student inputs, the similarity review, and the Canvas export."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from markdown_commands import bash_blocks, run

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SLUG = "02_self_attention"


def class_commands() -> list[str]:
    block = bash_blocks(README.split("<!-- class-of-40 -->", 1)[1])[0]
    return [line for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The README's class of 40 after its commands: where things are, and each command's run."""
    top = tmp_path_factory.mktemp("class-of-40")
    clone = top / "attention-kit"  # the commands name only the venv and tests/ of a clone
    clone.mkdir()
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (clone / "tests").symlink_to(ROOT / "tests")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNKIT_")}
    build, grade, report, export, *other_exports = class_commands()
    done = {}
    for name, command in (("build", build), ("grade", grade), ("report", report)):
        done[name] = run(command, clone, env)
        assert done[name].returncode == 0, f"{command}\n{done[name].stdout}\n{done[name].stderr}"
    # The export without --leave-out first: it must name the visitor and write nothing.
    done["strict export"] = run(export.replace(" --leave-out visitor", ""), clone, env)
    done["export"] = run(export, clone, env)
    for command in other_exports:
        done[command.split("--format ")[1].split()[0]] = run(command, clone, env)
    return {
        "top": top, "clone": clone, "env": env, "commands": class_commands(), "done": done,
        "class": top / "class-of-40", "out": top / "class-of-40-grades",
        "expected": json.loads((top / "class-of-40" / "expected.json").read_text()),
    }  # fmt: skip


def rows(graded: dict) -> dict[str, dict]:
    document = json.loads((graded["out"] / "grades.json").read_text())
    return {r["student"]: r for r in document["submissions"]}


def test_the_class_is_forty_of_every_kind(graded) -> None:
    roles = graded["expected"]["roles"]
    assert len(roles) == 40
    kinds = {role: sum(r == role for r in roles.values()) for role in set(roles.values())}
    assert kinds["copied"] >= 3 and kinds["renamed"] == 3 and kinds["off-roster"] == 1
    assert kinds["correct"] >= 15 and kinds["mistaken"] >= 10
    assert "wrote a class of 40" in graded["done"]["build"].stdout


def test_every_student_is_graded_and_the_penalties_match_the_hand_table(graded) -> None:
    by_student, expected = rows(graded), graded["expected"]
    assert set(by_student) == set(expected["roles"])
    copies = expected["copies"]
    for student, role in expected["roles"].items():
        row = by_student[student]
        assert row["status"] == "graded", (student, row["error"])
        original = copies.get(student, student)
        honest = expected["roles"].get(original, role) in ("correct", "off-roster")
        assert (row["raw_score"] == row["max_score"]) == honest, (student, row["raw_score"])
        late = expected["late"].get(student, {"days": 0, "percent": 0})
        assert row["late"]["days_late"] == late["days"], student
        assert row["late"]["penalty_percent"] == late["percent"], student
        final = max(0.0, row["raw_score"] - row["max_score"] * late["percent"] / 100)
        assert row["score"] == pytest.approx(final), student
        assert row["late"]["source"] == "nbgrader timestamp.txt"
    assert by_student["noor"]["late"]["status"] == "on time"  # three days' extension
    assert "an extension of 3 day(s)" in by_student["noor"]["late"]["reason"]
    grade = graded["done"]["grade"]
    assert "late policy: 4 of 40 graded submission(s) lost points" in grade.stdout


def test_hidden_inputs_were_drawn_per_student(graded) -> None:
    manifest = json.loads((graded["out"] / "class.json").read_text())
    digest = manifest["options"]["seed_per_student"]  # the secret's digest, never the secret
    assert isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{12}", digest), digest
    # Each result says which seeds its hidden inputs were drawn from: forty students, forty
    # draws (the copiers included: their inputs are their own too).
    drawn = {}
    for path in (graded["out"] / "results").glob("*/*.json"):
        record = json.loads(path.read_text())
        assert record["run"]["per_student_inputs"] == digest
        drawn[record["student"]] = record["run"]["inputs_drawn"]
    assert len(drawn) == 40 and all(d["seeds"] > 10 for d in drawn.values()), drawn
    assert len({d["digest"] for d in drawn.values()}) == 40
    secret = (graded["class"] / "course-secret").read_text().strip()
    for path in graded["out"].rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_the_copies_rank_first_in_the_similarity_review(graded) -> None:
    from test_similarity import ranked

    page = (graded["out"] / "report.html").read_text(encoding="utf-8")
    assert "Similarity review" in page and "40 submission(s) compared" in page
    rows = ranked(page)
    copies = {frozenset(pair) for pair in graded["expected"]["copies"].items()}
    top = {frozenset(row[:2]) for row in rows[: len(copies)]}
    assert top == copies, rows[: len(copies) + 3]
    honest = [row for row in rows if frozenset(row[:2]) not in copies]
    lowest_copy = min(min(row[2:]) for row in rows[: len(copies)])
    highest_honest = max((sum(row[2:]) / 2 for row in honest), default=0)
    print(f"copies: lowest share {lowest_copy}%; honest pairs: highest score {highest_honest}%")
    assert lowest_copy >= 90 and highest_honest < 60


def test_the_report_says_what_the_late_policy_took(graded) -> None:
    page = (graded["out"] / "report.html").read_text(encoding="utf-8")
    late = [v for v in graded["expected"]["late"].values() if v["percent"]]
    lost = sum(
        row["raw_score"] - row["score"] for row in rows(graded).values() if row["late"]["days_late"]
    )
    assert f"Late policy: {len(late)} handed in late, {len(late)} lost points ({lost:g} points" in (
        page
    )


def test_the_export_names_the_visitor_then_leaves_them_out_by_name(graded) -> None:
    strict, export, out = graded["done"]["strict export"], graded["done"]["export"], graded["out"]
    assert strict.returncode == 1
    assert "visitor (02_self_attention): no roster row match" in strict.stderr + strict.stdout
    assert export.returncode == 0, export.stderr
    assert "left out on purpose: visitor" in export.stdout
    table = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert table[0][-1] == "Self-attention in PyTorch" and table[1][0] == "Points Possible"
    assert len(table) == 2 + 39
    by_login = {row[3]: row[-1] for row in table[2:]}
    for student, row in rows(graded).items():
        if student != "visitor":
            assert float(by_login[student]) == pytest.approx(row["score"]), student
    late = list(csv.reader((out / "export-canvas-late.csv").open(newline="")))
    lost = {row[2]: float(row[8]) for row in late[1:] if float(row[8])}
    expected = {s: v["percent"] for s, v in graded["expected"]["late"].items() if v["percent"]}
    assert lost == expected


@pytest.mark.parametrize(
    ("kind", "head"), [("moodle", ["SIS Login ID"]), ("gradescope-csv", ["Name", "SID", "Email"])]
)
def test_moodle_and_gradescope_exports_carry_every_final_score(graded, kind, head) -> None:
    done = graded["done"][kind]
    assert done.returncode == 0, done.stderr
    table = list(csv.reader((graded["out"] / f"export-{kind}.csv").open(newline="")))
    assert table[0] == [*head, "Self-attention in PyTorch"] and len(table) == 1 + 39
    scores = {row["student"]: row["score"] for row in rows(graded).values()}
    column = 0 if kind == "moodle" else 1  # the student's id as the roster has it
    for row in table[1:]:
        assert float(row[-1]) == pytest.approx(scores[row[column]]), row
    assert (graded["out"] / f"export-{kind}-late.csv").is_file()


def test_a_malformed_timestamp_is_named_by_file_and_line_and_nothing_is_regraded(graded) -> None:
    copy = graded["top"] / "broken-class"
    shutil.copytree(graded["class"], copy)
    out = graded["top"] / "broken-grades"
    shutil.copytree(graded["out"], out)
    stamp = copy / "submitted" / "noor" / SLUG / "timestamp.txt"
    stamp.write_text("\n2026-11-23T20:00 next tuesday\n")
    grade = graded["commands"][1].replace("../class-of-40-grades", str(out))
    done = run(grade.replace("../class-of-40/", f"{copy}/"), graded["clone"], graded["env"])
    assert done.returncode == 3, done.stdout + done.stderr  # graded, gradebook written
    assert f"{stamp} line 2: '2026-11-23T20:00 next tuesday' is not a time" in done.stderr
    assert re.search(r"40 submission\(s\) already graded", done.stdout), done.stdout
    noor = {r["student"]: r for r in json.loads((out / "grades.json").read_text())["submissions"]}
    assert noor["noor"]["score"] == noor["noor"]["raw_score"]  # the raw score stands


def test_a_bad_roster_and_a_missing_out_are_named(graded) -> None:
    export = graded["commands"][3]
    roster = graded["top"] / "bad-roster.csv"
    roster.write_bytes(b"Student,ID,SIS Login ID\nAda,1,ada\nBen,2,\xff\xfe\n")
    done = run(export.replace("../class-of-40/roster.csv", str(roster)), graded["clone"],
               graded["env"])  # fmt: skip
    assert done.returncode != 0
    assert f"{roster} is not a roster the kit can read (line 3 is not UTF-8 text)" in done.stderr
    missing = graded["top"] / "no-such-grades"
    done = run(export.replace("../class-of-40-grades", str(missing)), graded["clone"],
               graded["env"])  # fmt: skip
    assert done.returncode != 0 and f"{missing} holds no grades.json" in done.stderr
