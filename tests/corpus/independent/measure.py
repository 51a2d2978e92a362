"""Measure the grader's diagnosis on the independent corpus.

Grades every lesson folder with ``attnkit grade --jobs 2`` (into a temporary folder) and,
for each case of ``manifest.toml``, compares the diagnosis ids given on the failing tests
of the broken exercise with the case's ``accept`` ids:

* named right: every id given is acceptable (and at least one was given);
* named wrong: some id given is not acceptable;
* unnamed: the exercise lost points but no id was given;
* not caught: the exercise kept all its points.

Run with the kit's virtual environment: ``.venv/bin/python tests/corpus/independent/measure.py``
(``--keep DIR`` grades into DIR instead and keeps it; ``--lesson SLUG`` grades one lesson).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUTCOMES = ("named right", "named wrong", "unnamed", "not caught")


def grade(lesson: str, out: Path) -> list[dict[str, Any]]:
    """The graded submissions of one lesson folder (``attnkit grade`` into ``out``)."""
    attnkit = Path(sys.executable).with_name("attnkit")
    command = [str(attnkit), "grade", str(HERE / lesson), "--assignment", lesson]
    command += ["--out", str(out), "--jobs", "2", "--force"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "grades.json").read_text(encoding="utf-8"))["submissions"]


def outcome(case: dict[str, Any], tests: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The case's outcome and the ids named on its broken exercise."""
    broken = [t for t in tests if t["exercise"] == case["exercise"]]
    failing = [t for t in broken if t["status"] != "passed"]
    ids = sorted({t["diagnosis"]["id"] for t in failing if t["diagnosis"]})
    if not failing:
        return "not caught", ids
    if not ids:
        return "unnamed", ids
    return ("named right" if set(ids) <= set(case["accept"]) else "named wrong"), ids


def measure(cases: list[dict[str, Any]], folder: Path) -> dict[str, Counter[str]]:
    """Per lesson, how many cases had each outcome (printing every case that is not named right)."""
    tally: dict[str, Counter[str]] = {}
    for lesson in sorted({c["lesson"] for c in cases}):
        graded = {Path(s["source"]).name: s for s in grade(lesson, folder / lesson)}
        for case in (c for c in cases if c["lesson"] == lesson):
            result, ids = outcome(case, graded[Path(case["file"]).name]["tests"])
            tally.setdefault(lesson, Counter())[result] += 1
            if result != "named right":
                print(f"  {result:12} {case['file']} {case['exercise']} named {ids}")
    return tally


def report(tally: dict[str, Counter[str]]) -> str:
    rows = [("lesson", "cases", *OUTCOMES)]
    total: Counter[str] = Counter()
    for lesson, counts in tally.items():
        total.update(counts)
        rows.append((lesson, str(sum(counts.values())), *(str(counts[o]) for o in OUTCOMES)))
    rows.append(("all", str(sum(total.values())), *(str(total[o]) for o in OUTCOMES)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="grade into this folder and keep it")
    parser.add_argument("--lesson", help="measure only this lesson")
    args = parser.parse_args()
    with (HERE / "manifest.toml").open("rb") as handle:
        cases = tomllib.load(handle)["case"]
    cases = [c for c in cases if args.lesson in (None, c["lesson"])]
    with tempfile.TemporaryDirectory(prefix="indep-measure-") as temp:
        tally = measure(cases, args.keep or Path(temp))
    print(report(tally))


if __name__ == "__main__":
    main()
