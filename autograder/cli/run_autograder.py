"""Gradescope's ``run_autograder`` (see :mod:`attnkit_autograder.platforms.gradescope`):
grade ``/autograder/submission`` and write ``/autograder/results/results.json``.

    python -m attnkit_autograder.cli.run_autograder --root /autograder --assignment 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.assignments import get_assignment

from ..classes.late import read_policy
from ..grading.options import GradeOptions
from ..platforms.gradescope import PASSED_ON, VISIBILITIES, GraderFault, grade_for_gradescope
from . import options


def main(argv: list[str] | None = None) -> int:
    """``run_autograder``'s entry point: a results.json for every submission the grader
    could judge (a damaged or missing notebook included, with what to fix); exit 1 and
    no results.json when the grader itself failed."""
    parser = argparse.ArgumentParser(description="grade a Gradescope submission")
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    parser.add_argument("--assignment", required=True)
    parser.add_argument("--visibility", default="after_published", choices=VISIBILITIES)
    parser.add_argument("--seed-per-student", action="store_true")
    parser.add_argument("--late-policy", type=Path, default=None)
    options.add_grade_options(parser, PASSED_ON)
    args = parser.parse_args(argv)
    slug = get_assignment(args.assignment).slug
    target = args.root / "results" / "results.json"
    target.unlink(missing_ok=True)  # a stale file must never stand in for this grading
    policy = None
    if args.late_policy is not None:
        policy = read_policy(args.late_policy)
    try:
        graded_with = GradeOptions(**{name: getattr(args, name) for name in PASSED_ON})
        results = grade_for_gradescope(
            args.root, slug, args.visibility, args.seed_per_student, policy, graded_with
        )
    except GraderFault as fault:
        print(f"the grader failed on this submission, so no score is recorded: {fault}")
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"score {results['score']}: wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
