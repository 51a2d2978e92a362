"""The grading options are declared once (``attnkit_autograder/grading/options.py``): the
parser of every command that takes them, class.json, the Slurm script and Gradescope's
``run_autograder`` follow that one record."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.cli import build_parser
from attnkit_autograder.cli import options
from attnkit_autograder.grading.options import GradeOptions, fields

ROOT = Path(__file__).resolve().parents[1]
LIMITS = ("timeout", "budget", "memory_mb", "cell_timeout")


def test_every_option_has_help_and_numbers_have_bounds_around_their_default() -> None:
    for spec in fields():
        assert len(spec.metadata["help"]) > 20, spec.name
        if spec.type in ("float", "int"):
            low, high = spec.metadata["bounds"]
            assert low <= spec.default <= high, spec.name


def test_no_product_code_keeps_a_default_of_its_own_for_a_limit() -> None:
    """No function of the product takes a limit with a default beside the record's: the
    record is the one place a default is written."""
    found = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        if path.name == "options.py" and path.parent.name == "grading":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = node.args.args + node.args.kwonlyargs
            defaults = [*node.args.defaults, *node.args.kw_defaults]
            named = arguments[len(arguments) - len(defaults) :]
            for argument, default in zip(named, defaults, strict=True):
                wanted = argument.arg in ("budget", "cell_timeout", "memory_mb", "call_timeout")
                wanted = wanted or argument.arg == "memory_bytes"
                if wanted and isinstance(default, ast.Constant) and default.value is not None:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {argument.arg}")
    assert found == []


def test_the_commands_offer_the_records_options_with_its_defaults() -> None:
    parser = build_parser()
    grade = parser.parse_args(["grade", "subs", "--out", "out"])
    assert options.options_of(grade) == GradeOptions()
    slurm = parser.parse_args(["slurm", "subs", "--out", "out", "--shards", "2"])
    assert options.options_of(slurm) == GradeOptions()
    changed = parser.parse_args(["grade", "subs", "--out", "out", "--budget", "90", "--feedback"])
    assert options.options_of(changed) == GradeOptions(budget=90.0, feedback=True)


def changed_default(tmp_path: Path) -> dict[str, str]:
    """An environment whose instructor package is a copy with one default changed: the
    budget, 120 s in the record, is 77 s there."""
    package = tmp_path / "changed" / "attnkit_autograder"
    shutil.copytree(ROOT / "autograder", package, ignore=shutil.ignore_patterns("__pycache__"))
    record = package / "grading" / "options.py"
    text = record.read_text(encoding="utf-8")
    assert text.count("default=120.0,") == 1
    record.write_text(text.replace("default=120.0,", "default=77.0,"), encoding="utf-8")
    return {**os.environ, "PYTHONPATH": str(package.parent)}


@pytest.mark.slow
def test_a_default_changed_in_the_record_reaches_the_parser_class_json_and_slurm(
    tmp_path: Path,
) -> None:
    env = changed_default(tmp_path)
    shown = subprocess.run(
        [sys.executable, "-m", "attnkit", "grade", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert "(default 77)" in " ".join(shown.split())
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    subprocess.run(
        [sys.executable, "-m", "attnkit", "slurm", str(subs), "--out", str(out), "--shards", "2"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    task = (out / "slurm" / "shards.sbatch").read_text().splitlines()[-1]
    assert "--budget 77 " in task
    # class.json, as `attnkit grade` writes it for this command line.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from attnkit.cli import build_parser\n"
        "from attnkit_autograder.cli.options import options_of\n"
        "from attnkit_autograder.classes import run_manifest\n"
        "args = build_parser().parse_args(['grade', sys.argv[1], '--out', sys.argv[2]])\n"
        "manifest = run_manifest.of_run(Path(sys.argv[1]), None, options_of(args), [], None)\n"
        "run_manifest.write(Path(sys.argv[2]), manifest)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(subs), str(out)], env=env, check=True, timeout=120
    )
    assert json.loads((out / "class.json").read_text())["options"]["budget"] == 77.0
