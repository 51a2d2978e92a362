"""Package the grader as a Gradescope autograder, and speak Gradescope's results format.

``attnkit gradescope OUT.zip`` writes a zip with Gradescope's two entry points:

* ``setup.sh`` installs the kit (CPU PyTorch) on Gradescope's image, once per assignment;
* ``run_autograder`` grades ``/autograder/submission`` with the same sandboxed grader as
  ``attnkit grade`` and converts the result into ``/autograder/results/results.json``.

Every graded cell becomes one Gradescope test. The hidden tests are marked
``after_published`` (students see them once grades are published) or ``hidden``.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

KIT_PARTS = ("attnkit", "solutions", "autograder", "data", "pyproject.toml", "README.md")
SKIPPED_NAMES = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
cd /autograder/source
apt-get update -qq && apt-get install -y -qq python3 python3-pip python3-venv >/dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q --upgrade pip
# The CPU build of PyTorch: the autograder needs no GPU and no CUDA packages.
/autograder/venv/bin/pip install -q "torch>=2.4,<2.14" --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install -q /autograder/source
/autograder/venv/bin/attnkit data || true
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission.
set -uo pipefail
cd /autograder/source
export ATTNKIT_DATA_DIR=/autograder/source/data
/autograder/venv/bin/attnkit grade /autograder/submission --out /autograder/attnkit-out \\
    --assignment {assignment} --force --jobs 1
/autograder/venv/bin/python -m attnkit_autograder.gradescope \\
    /autograder/attnkit-out/grades.json /autograder/results/results.json --visibility {visibility}
"""


def build_zip(target: Path, assignment: str, visibility: str, kit_root: Path) -> Path:
    """Write the autograder zip for one assignment."""
    if not (kit_root / "solutions").is_dir() or not (kit_root / "autograder").is_dir():
        raise KitError(
            f"{kit_root} does not hold the kit's source (solutions/ and autograder/).",
            "Run `attnkit gradescope` from a clone of the kit's repository.",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("setup.sh"), SETUP_SH)
        archive.writestr(
            zipfile.ZipInfo("run_autograder"),
            RUN_AUTOGRADER.format(assignment=assignment, visibility=visibility),
        )
        for info in archive.infolist():
            info.external_attr = 0o755 << 16
        for part in KIT_PARTS:
            path = kit_root / part
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            for file in files:
                relative = file.relative_to(kit_root)
                if SKIPPED_NAMES & set(relative.parts) or file.suffix in (".pyc", ".part"):
                    continue
                archive.write(file, f"source/{relative.as_posix()}")
    return target


def to_results(grades: dict[str, Any], visibility: str = "after_published") -> dict[str, Any]:
    """Gradescope's results.json for the one submission in ``grades``."""
    records = grades.get("submissions", [])
    if len(records) != 1:
        return {
            "score": 0.0,
            "output": f"Expected exactly one notebook in the submission, found {len(records)}. "
            "Submit the assignment's .ipynb file.",
            "tests": [],
        }
    record = records[0]
    tests = []
    for test in record["tests"]:
        output = test["message"]
        if test.get("hint"):
            output += f"\nHint: {test['hint']}"
        tests.append(
            {
                "name": f"{test['exercise']}: {test['grade_id']}",
                "score": test["points"],
                "max_score": test["max_points"],
                "status": "passed" if test["status"] == "passed" else "failed",
                "output": output,
                "visibility": visibility,
            }
        )
    result = {
        "score": record["score"],
        "tests": tests,
        "visibility": visibility,
        "stdout_visibility": "hidden",
    }
    if record["status"] == "error":
        result["output"] = f"Your submission could not be graded: {record['error']}"
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="grades.json -> Gradescope results.json")
    parser.add_argument("grades", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument(
        "--visibility",
        default="after_published",
        choices=["hidden", "after_due_date", "after_published", "visible"],
    )
    args = parser.parse_args(argv)
    try:
        grades = json.loads(args.grades.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        grades = {"submissions": []}
        print(f"could not read {args.grades}: {exc}")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(to_results(grades, args.visibility), indent=1))
    return 0


def verify_scripts_parse(zip_path: Path) -> None:
    """bash -n on both scripts: a syntax error would only show on Gradescope's machine."""
    with zipfile.ZipFile(zip_path) as archive:
        for name in ("setup.sh", "run_autograder"):
            subprocess.run(["bash", "-n"], input=archive.read(name), check=True)


if __name__ == "__main__":
    raise SystemExit(main())
