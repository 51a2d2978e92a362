"""The grader against the hostile corpus (tests/hostile_cases/): every case, one run.

All cases are graded in ONE run (two graders in parallel, short timeouts), beside correct
students. Each case is a correct lesson-2 notebook with one attack planted, so its score
is exact. The run must finish and write grades.json; nothing hostile may earn a point its
code did not earn; no correct student may lose one; files outside OUT stay untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hostile_cases import MAX_SCORE, SLUG, Targets, build_corpus, cases, file_cases, ungradable
from hostile_cases.classic import CANARY_NAME

from attnkit_autograder.authoring.corpus import released_notebook
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.results import result_paths, write_gradebook
from attnkit_autograder.classes.supervisor import grade_all
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
HIDDEN_SUITE = ROOT / "autograder" / "lessons" / "l02_self_attention" / "hidden_tests.py"
GRADER_OWNED = [
    HIDDEN_SUITE,
    ROOT / "solutions" / "self_attention.py",
    ROOT / "autograder" / "lessons" / "l02_self_attention" / "mistakes.toml",
    ROOT / "attnkit" / "student_process" / "worker.py",
]
SETTINGS = GradeSettings(GradeOptions(timeout=3.0, cell_timeout=5.0, budget=60.0, memory_mb=1024))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    grader_file = tmp / "grader-owned.txt"
    grader_file.write_text("original")
    out = tmp / "out"
    out.mkdir()
    (out / "grades.json").write_text("{}")
    canary = Path("/dev/shm") / CANARY_NAME
    canary.write_text("the grader's")
    submissions = tmp / "submissions"
    targets = Targets(
        secrets=(
            str(HIDDEN_SUITE),
            str(ROOT / "solutions" / "self_attention.py"),
            str(submissions / "correct_02_self_attention.ipynb"),
            str(out / "grades.json"),
            str(grader_file),
        ),
        writable=(str(grader_file), str(out / "grades.json"), str(HIDDEN_SUITE)),
        repo=str(ROOT),
        grader_cwd=os.getcwd(),
    )
    corpus = build_corpus(submissions, ROOT / "assignments", targets)
    before = {path: digest(path) for path in GRADER_OWNED}
    started = time.monotonic()
    done, interrupted, _lost = grade_all(discover(submissions), out, SETTINGS, jobs=2)
    seconds = time.monotonic() - started
    records = {r["student"]: r for r in write_gradebook(out, result_paths(out))}
    print(f"\nhostile corpus: {len(corpus)} submissions graded in {seconds:.1f} s (jobs=2)")
    yield {
        "corpus": corpus,
        "records": records,
        "done": done,
        "interrupted": interrupted,
        "out": out,
        "before": before,
        "grader_file": grader_file,
        "canary": canary,
    }
    canary.unlink(missing_ok=True)


def cell(record: dict, grade_id: str) -> dict:
    return next(t for t in record["tests"] if t["grade_id"] == grade_id)


def failures(record: dict) -> list[tuple[str, str, str]]:
    return [
        (t["grade_id"], t["status"], t["message"])
        for t in record["tests"]
        if t["status"] != "passed"
    ]


def test_the_run_finishes_and_writes_grades_json_for_everyone(graded) -> None:
    assert not graded["interrupted"]
    assert graded["done"] == len(graded["corpus"])
    document = json.loads((graded["out"] / "grades.json").read_text())
    assert {s["student"] for s in document["submissions"]} == set(graded["corpus"])


def test_the_corpus_covers_every_class_with_at_least_60_cases(graded) -> None:
    kinds = [case.kind for case, _ in graded["corpus"].values()]
    assert len(kinds) >= 60
    assert {"evasion", "reply", "escape", "limit", "file"} <= set(kinds)


def case_names() -> list[str]:
    """Every case's name (the paths in Targets do not change which cases exist)."""
    placeholder = Targets(secrets=("/",), writable=(), repo=str(ROOT))
    names = [c.name for c in cases(placeholder)]
    names += list(file_cases(released_notebook(SLUG, ROOT / "assignments")))
    return sorted(names)


@pytest.mark.parametrize("case_name", case_names())
def test_case_gets_exactly_its_expected_outcome(graded, case_name) -> None:
    case, _ = graded["corpus"][case_name]
    record = graded["records"][case_name]
    if case_name in ungradable():
        assert record["status"] == "error" and case.words in record["error"], record["error"]
        assert record["score"] == 0 and all(t["status"] == "error" for t in record["tests"])
        return
    assert record["status"] == "graded", record["error"]
    attacked = cell(record, case.cell)
    # What must hold on any machine: the attack earns nothing it is not owed. On a loaded
    # machine a call may run out of its time first: a timeout costs the cell's points, with
    # the grader's own words for it, so it stands for the expected verdict (the attack still
    # earns nothing); the score is then at most what is owed.
    timed_out = [t for t in record["tests"] if t["status"] == "timeout"]
    assert record["score"] <= case.score, failures(record)
    if not timed_out or case.status == "timeout":
        assert record["score"] == case.score, failures(record)
    if attacked["status"] == "timeout" and case.status not in ("passed", "timeout"):
        assert "time" in attacked["message"], attacked
        return
    assert attacked["status"] == case.status, failures(record)
    assert case.words in attacked["message"], attacked
    if case.note:
        assert any(case.note in note for note in record["notes"]), record["notes"]


def test_nothing_hostile_earns_a_point_and_no_correct_student_loses_one(graded) -> None:
    for name, (case, _) in graded["corpus"].items():
        assert graded["records"][name]["score"] <= case.score, name
    for name in ("correct", "zz_correct_classmate", "nbformat3"):
        assert graded["records"][name]["score"] == MAX_SCORE, failures(graded["records"][name])


def test_files_outside_out_are_untouched(graded) -> None:
    assert {path: digest(path) for path in GRADER_OWNED} == graded["before"]
    assert graded["grader_file"].read_text() == "original"
    assert graded["canary"].read_text() == "the grader's"


def test_every_result_records_the_sandbox_and_none_relies_on_landlock(graded) -> None:
    # This machine may have no Landlock at all: the sandbox is bubblewrap's namespaces.
    for name in ("correct", "read_hidden_files", "write_outside_tmp"):
        record = json.loads(next((graded["out"] / "results").glob(f"{name}-*/*.json")).read_text())
        assert record["sandbox"] == "bubblewrap"
        assert "landlock" not in json.dumps(record["run"]["sandbox"]).lower()


def landlock_abi() -> int:
    """Landlock's ABI version on this kernel, 0 if it has none."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    landlock_create_ruleset, version_flag = 444, 1
    abi = libc.syscall(landlock_create_ruleset, None, 0, version_flag)
    return max(abi, 0)


def test_escapes_are_refused_whether_or_not_the_kernel_has_landlock(graded) -> None:
    print(f"Landlock ABI on this machine: {landlock_abi()}")
    escapes = [name for name, (case, _) in graded["corpus"].items() if case.kind == "escape"]
    for name in escapes:
        v2 = cell(graded["records"][name], "test_v2_forward")
        assert "ESCAPED" not in v2["message"], (name, v2["message"])


POOLED = (
    "from concurrent.futures import ThreadPoolExecutor\n"
    "def probe():\n"
    "    import numpy as np\n"
    "    with ThreadPoolExecutor(max_workers=3) as pool:\n"
    "        return np.array(list(pool.map(lambda i: i * i, range(6))))\n"
)


def test_a_call_starts_threads_unless_the_recorder_alone_must_vouch_for_it() -> None:
    """A graded call may run its work on a thread pool where the worker withholds what the
    exercise forbids (here: nothing is forbidden); a call with a forbidden function that no
    worker withholds (a library's own Python code) runs where no thread can start, since the
    recorder watches only the calling thread."""
    from attnkit.notebook_code import Cell
    from attnkit_autograder.sandbox.isolation import IsolatedSubmission

    outcomes = []
    for forbidden in ((), ("numpy.linalg.norm",)):
        sandbox = IsolatedSubmission(
            [Cell(1, POOLED)], GradeOptions(timeout=30, budget=60).limits()
        )
        try:
            kwargs = {"name": "probe", "args": [], "kwargs": {}, "framework": "numpy"}
            result = sandbox.run("call_function", forbidden=forbidden, **kwargs)
            outcomes.append(result["out"]["array"].tolist())
        except Exception as exc:
            outcomes.append(str(exc))
        finally:
            sandbox.close()
    assert outcomes[0] == [0, 1, 4, 9, 16, 25]
    assert "can't start new thread" in str(outcomes[1]), outcomes[1]


def test_nothing_of_one_submission_reaches_the_next() -> None:
    """Files in /tmp and /dev/shm, and a thread that keeps writing them, are gone when the
    next submission starts in the same sandbox."""
    from attnkit.notebook_code import Cell
    from attnkit_autograder.sandbox.isolation import IsolatedSubmission

    plant = (
        "import os, threading, time\n"
        "def linger():\n"
        "    while True:\n"
        "        for folder in ('/tmp', '/dev/shm'):\n"
        "            open(os.path.join(folder, 'left-' + str(os.getpid())), 'w').write('x')\n"
        "        time.sleep(0.01)\n"
        "threading.Thread(target=linger).start()\n"
        "for path in ('/left-root', '/opt/attnkit/left_module.py'):\n"
        "    try:\n"
        "        open(path, 'w').write('x = 1')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    # The planting cell leaves its thread running (graded with it running, with a note); the
    # thread and its files die with that worker.
    plant_probe = "def probe():\n    import numpy as np\n    return np.array(0)\n"
    look = (
        "import os\n"
        "def probe():\n"
        "    import numpy as np\n"
        "    names = os.listdir('/tmp') + os.listdir('/dev/shm')\n"
        "    mine = (1, os.getpid())\n"
        "    others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in mine]\n"
        "    planted = ('/left-root', '/opt/attnkit/left_module.py')\n"
        "    roots = [p for p in planted if os.path.exists(p)]\n"
        "    left = sum(n.startswith('left-') for n in names)\n"
        "    return np.array([left, len(others), len(roots)])\n"
    )
    seen, notes = [], []
    for cells in ([plant, plant_probe], [look]):
        sandbox = IsolatedSubmission(
            [Cell(i + 1, c) for i, c in enumerate(cells)],
            GradeOptions(timeout=30, budget=60).limits(),
        )
        try:
            result = sandbox.run(
                "call_function", name="probe", args=[], kwargs={}, framework="numpy"
            )
        finally:
            sandbox.close()
        seen.append(result["out"]["array"])
        notes.append(sandbox.notes)
    assert any("code cell 1 left a thread running" in n for n in notes[0]), notes[0]
    assert np.array_equal(seen[1], [0, 0, 0]), (
        f"the previous submission left (files, processes, files outside /tmp): {seen[1]}"
    )
