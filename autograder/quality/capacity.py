"""What grows with the class when it is graded on many machines: discovery, the class file,
the slicing, the merge and the gradebook files. A benchmark that prints figures.

    python -m attnkit_autograder.quality.capacity --submissions 10000 --shards 8

It writes N notebooks (copies of one, each under its own student's name, so every file is
read and hashed as in a real class), discovers them as every shard does, writes the class
file, then plants a synthetic result for every member in its shard's folder (as if the
shards had graded them) and times ``attnkit merge``. Grading itself is not repeated here:
its cost per submission is the benchmark's (:mod:`attnkit_autograder.quality.benchmark`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attnkit.assignments import ASSIGNMENTS

from ..authoring.corpus import fill_notebook, released_notebook, write_notebook
from ..classes import discovery, merge, run_manifest, shards
from ..grading.options import GradeOptions
from ..grading.submission import Submission
from ..lessons.rubric import graded_cells
from .benchmark import ASSIGNMENTS_DIR

SLUG = "02_self_attention"


def synthetic_result(submission: Submission, index: int, stamp: str) -> dict[str, Any]:
    """A result as the grader writes one: every graded cell, a score, run details, and what
    it was graded with."""
    tests = []
    for number, cell in enumerate(graded_cells(SLUG)):
        failed = (index + number) % 7 == 0
        tests.append(
            {
                "checks_passed": 0 if failed else 3,
                "checks_total": 3,
                "diagnosis": None,
                "exercise": cell.exercise,
                "grade_id": cell.grade_id,
                "hint": None,
                "max_points": cell.points,
                "points": 0.0 if failed else cell.points,
                "message": "the weights differ from the reference at [0, 1]" if failed else "",
                "status": "failed" if failed else "passed",
            }
        )
    return {
        "student": submission.student, "assignment": SLUG, "status": "graded",
        "score": sum(t["points"] for t in tests), "max_score": sum(t["max_points"] for t in tests),
        "error": None, "id_rule": submission.id_rule, "notes": [], "sandbox": "bubblewrap",
        "source": str(submission.path), "source_sha256": submission.sha256, "tests": tests,
        "run": {"seconds": 0.12, "phases": {"cells": 0.05, "hidden tests": 0.04}},
        "graded_with": stamp,
    }  # fmt: skip


@contextlib.contextmanager
def timed(what: str, figures: dict[str, float]) -> Iterator[None]:
    """Put the seconds the block took into ``figures[what]``."""
    start = time.perf_counter()
    yield
    figures[what] = time.perf_counter() - start


def measure(work: Path, count: int, shard_count: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    subs, out = work / "subs", work / "out"
    notebook = fill_notebook(released_notebook(SLUG, ASSIGNMENTS_DIR), SLUG)
    subs.mkdir()
    template = write_notebook(notebook, work / "template.ipynb").read_text()
    for index in range(count):
        # One byte of difference per file: every digest differs, as in a real class.
        text = template.replace('"nbformat": 4', f'"nbformat": 4, "x": {index}', 1)
        (subs / f"student{index:06d}_{SLUG}.ipynb").write_text(text)
    figures["notebook bytes"] = len(template)
    with timed("discovery", figures):
        found = discovery.discover(subs)
    assert len(found) == count, len(found)
    with timed("class file", figures):
        manifests = [
            run_manifest.of_run(subs, None, GradeOptions(), found, shards.Shard(i, shard_count))
            for i in range(1, shard_count + 1)
        ]
    with timed("slicing", figures):
        slices = [
            shards.slice_of(found, shards.Shard(i, shard_count), run_manifest.shard_key)
            for i in range(1, shard_count + 1)
        ]
    sizes = [len(s) for s in slices]
    figures["largest shard"], figures["smallest shard"] = max(sizes), min(sizes)
    for manifest, members in zip(manifests, slices, strict=True):
        assert manifest.shard is not None
        folder = out / manifest.shard.folder
        run_manifest.write(folder, manifest)
        for index, submission in enumerate(members):
            target = folder / run_manifest.member(submission, subs).result
            target.parent.mkdir(parents=True, exist_ok=True)
            result = synthetic_result(submission, index, manifest.stamp)
            target.write_text(json.dumps(result, indent=1))
    figures["class file bytes"] = (
        (out / manifests[0].shard.folder / run_manifest.NAME).stat().st_size
    )  # type: ignore[union-attr]
    with timed("merge", figures):
        merge.merge([out], None)
    figures["grades.json bytes"] = (out / "grades.json").stat().st_size
    figures["grades.csv bytes"] = (out / "grades.csv").stat().st_size
    return figures


def kib(size: float) -> str:
    return f"{size / 1024:,.0f} KiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args(argv)
    assert SLUG in ASSIGNMENTS
    with tempfile.TemporaryDirectory(prefix="attnkit-capacity-") as tmp:
        figures = measure(Path(tmp), args.submissions, args.shards)
    n = args.submissions
    print(
        f"{n} submissions of {SLUG} ({kib(figures['notebook bytes'])} a notebook), "
        f"{args.shards} shards ({figures['smallest shard']:.0f} to "
        f"{figures['largest shard']:.0f} submissions each)"
    )
    for what in ("discovery", "class file", "slicing", "merge"):
        seconds = figures[what]
        print(f"  {what:<11}: {seconds:7.2f} s ({seconds / n * 1e3:.3f} ms a submission)")
    print(
        f"  sizes      : class.json {kib(figures['class file bytes'])}, grades.json "
        f"{kib(figures['grades.json bytes'])}, grades.csv {kib(figures['grades.csv bytes'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
