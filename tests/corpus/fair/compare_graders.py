"""Grade the fairness corpus with every grader and print where each falls short of full marks.

    .venv/bin/python tests/corpus/fair/compare_graders.py WORK_DIR [--skip-nbgrader]

Every corpus submission is correct (``tests/test_fairness.py`` proves it in-process), so
every grader should give each one full marks. The script grades the corpus with

* ``attnkit grade`` on one folder per student;
* the Gradescope path: ``attnkit grade --assignment <lesson>`` and
  ``attnkit_autograder.platforms.gradescope.to_results``, the two steps of ``run_autograder``;
* real ``nbgrader autograde`` in an ``attnkit course init`` course, whose
  ``submitted/<student>/<lesson>/`` folders hold the files as ``zip_collect`` would
  store them, and then ``attnkit grade`` on the same course, which writes the
  gradebook (the nbgrader-gradebook path);

and prints one row per submission with each grader's score and the cells it withheld.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from builder import Built, write_corpus


@dataclass
class Outcome:
    """One grader's result for one submission: points, maximum, and the cells short of full."""

    score: float
    max_score: float
    short: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return self.score == self.max_score and self.max_score > 0


def attnkit(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    """Run the kit's CLI with this interpreter; a failure raises with its stderr."""
    from attnkit_autograder.authoring.released import scripts_on_path

    done = subprocess.run(
        [sys.executable, "-m", "attnkit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=scripts_on_path(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"attnkit {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


def outcome_of(record: dict[str, Any]) -> Outcome:
    short = [
        f"{t['grade_id']} ({t['status']}: {t['message'][:80]})"
        for t in record["tests"]
        if t["points"] < t["max_points"]
    ]
    if record["status"] == "error":
        short.insert(0, f"not graded: {record['error']}")
    return Outcome(record["score"], record["max_score"], short)


def grade_with_attnkit(corpus: list[Built], work: Path, jobs: int = 2) -> dict[str, Outcome]:
    """``attnkit grade`` over one folder per student; keyed by student."""
    folder, out = work / "attnkit-in", work / "attnkit-out"
    shutil.rmtree(folder, ignore_errors=True)
    for built in corpus:
        built.write(folder)
    attnkit("grade", str(folder), "--out", str(out), "--force", "--jobs", str(jobs))
    records = json.loads((out / "grades.json").read_text())["submissions"]
    return {r["student"]: outcome_of(r) for r in records}


def grade_with_gradescope(corpus: list[Built], work: Path, jobs: int = 1) -> dict[str, Outcome]:
    """The two steps of Gradescope's run_autograder, one ``attnkit grade`` per lesson, with
    one grader by default: Gradescope grades each submission in a container of its own."""
    from attnkit_autograder.platforms.gradescope import to_results

    outcomes: dict[str, Outcome] = {}
    for lesson in sorted({b.lesson for b in corpus}):
        folder, out = work / "gradescope-in" / lesson, work / "gradescope-out" / lesson
        shutil.rmtree(folder, ignore_errors=True)
        for built in (b for b in corpus if b.lesson == lesson):
            built.write(folder)
        attnkit(
            "grade", str(folder), "--out", str(out), "--assignment", lesson, "--force",
            "--jobs", str(jobs),
        )  # fmt: skip
        grades = json.loads((out / "grades.json").read_text())
        for record in grades["submissions"]:
            results = to_results({**grades, "submissions": [record]})
            short = [t["name"] for t in results["tests"] if t["score"] < t["max_score"]]
            maximum = sum(t["max_score"] for t in results["tests"])
            outcomes[record["student"]] = Outcome(results["score"], maximum, short)
    return outcomes


def nbgrader_course(corpus: list[Built], work: Path) -> Path:
    """A fresh course whose submitted/ holds the corpus as zip_collect stores it."""
    from attnkit_autograder.platforms.course import init_course

    course = work / "course"
    shutil.rmtree(course, ignore_errors=True)
    init_course(course)
    for built in corpus:
        folder = course / "submitted" / built.student / built.lesson
        folder.mkdir(parents=True)
        # zip_collect stores a notebook under the assignment's name; a .py keeps its own.
        name = f"{built.lesson}.ipynb" if built.editor != "py" else built.file_name
        (folder / name).write_bytes(built.file_bytes())
    return course


def gradebook_scores(course: Path) -> dict[tuple[str, str], dict[str, float]]:
    """Points per graded cell, per (student, lesson), as the course's gradebook holds them."""
    from nbgrader.api import Gradebook

    from attnkit_autograder.authoring.released import scripts_on_path

    os.environ.update(scripts_on_path())  # the Gradebook runs `alembic` by name
    scores: dict[tuple[str, str], dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for assignment in gradebook.assignments:
            for submission in gradebook.assignment_submissions(assignment.name):
                cells = {
                    g.name: float(g.score)
                    for notebook in submission.notebooks
                    for g in notebook.grades
                }
                scores[(submission.student.id, assignment.name)] = cells
    return scores


def max_points(lesson: str) -> dict[str, float]:
    from attnkit_autograder.lessons.rubric import graded_cells

    return {cell.grade_id: cell.points for cell in graded_cells(lesson)}


def grade_with_nbgrader(
    corpus: list[Built], work: Path
) -> tuple[dict[str, Outcome], dict[str, Outcome]]:
    """nbgrader autograde, then ``attnkit grade`` into the same gradebook.

    Returns (nbgrader's outcomes, the gradebook's outcomes after ``attnkit grade``).
    """
    from attnkit_autograder.authoring.released import scripts_on_path

    course = nbgrader_course(corpus, work)
    logs = []
    for lesson in sorted({b.lesson for b in corpus}):
        # nbgrader exits non-zero when a submission fails to autograde; the gradebook
        # still holds every other submission's scores, so carry on and keep the log.
        done = subprocess.run(
            [sys.executable, "-m", "nbgrader", "autograde", lesson, "--force"],
            cwd=course,
            capture_output=True,
            text=True,
            timeout=3600,
            env=scripts_on_path(),
        )
        logs.append(f"== nbgrader autograde {lesson}: exit {done.returncode}\n{done.stderr}")
    (work / "nbgrader-autograde.log").write_text("\n".join(logs))
    theirs = outcomes_from_gradebook(corpus, gradebook_scores(course))
    return theirs, grade_into_gradebook(course, corpus, work)


def grade_into_gradebook(course: Path, corpus: list[Built], work: Path) -> dict[str, Outcome]:
    """``attnkit grade`` on an nbgrader course, read back from the course's gradebook."""
    attnkit("grade", str(course), "--out", str(work / "course-out"), "--force")
    return outcomes_from_gradebook(corpus, gradebook_scores(course))


def outcomes_from_gradebook(
    corpus: list[Built], scores: dict[tuple[str, str], dict[str, float]]
) -> dict[str, Outcome]:
    outcomes = {}
    for built in corpus:
        points = max_points(built.lesson)
        got = scores.get((built.student, built.lesson), {})
        short = [cell for cell, most in points.items() if got.get(cell, 0.0) < most]
        outcomes[built.student] = Outcome(sum(got.values()), sum(points.values()), short)
    return outcomes


def table(corpus: list[Built], graders: dict[str, dict[str, Outcome]]) -> str:
    """A Markdown table: one row per submission, one column per grader."""
    names = list(graders)
    lines = [
        "| submission | patterns | " + " | ".join(names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for built in corpus:
        cells = []
        for name in names:
            outcome = graders[name].get(built.student)
            if outcome is None:
                cells.append("missing")
            elif outcome.full:
                cells.append(f"{outcome.score:g}/{outcome.max_score:g}")
            else:
                cells.append(
                    f"**{outcome.score:g}/{outcome.max_score:g}** " + "; ".join(outcome.short)
                )
        label = f"{built.lesson[:2]}/{built.name} ({built.file_name})"
        lines.append(f"| {label} | {', '.join(built.patterns)} | " + " | ".join(cells) + " |")
    totals = [f"{sum(o.full for o in graders[n].values() if o)}/{len(corpus)} full" for n in names]
    lines.append("| **full marks** | | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="an empty folder for the graders' files")
    parser.add_argument("--skip-nbgrader", action="store_true", help="only the kit's graders")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = [built for built, _ in write_corpus(args.work / "corpus")]
    graders = {"attnkit grade": grade_with_attnkit(corpus, args.work)}
    graders["Gradescope path"] = grade_with_gradescope(corpus, args.work)
    if not args.skip_nbgrader:
        theirs, ours = grade_with_nbgrader(corpus, args.work)
        graders["nbgrader autograde"] = theirs
        graders["gradebook after attnkit grade"] = ours
    report = table(corpus, graders)
    (args.work / "comparison.md").write_text(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
