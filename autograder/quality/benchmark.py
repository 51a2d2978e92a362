"""Measure grading speed: ``attnkit grade`` against ``nbgrader autograde``, in one run.

    python -m attnkit_autograder.quality.benchmark --submissions 1000 --nbgrader-sample 12

builds submissions of one assignment from its released notebook (correct ones, ones with
a catalogued mistake, one that loops forever and one damaged file), grades them all with
``attnkit grade`` and a sample of the same files with the real ``nbgrader autograde``,
and prints wall time per submission and in total, submissions per second, the peak
resident memory of each grader's whole process tree, and the ratio between the two. It
also times the student paths: ``attnkit check`` from a shell, and the in-notebook check.

It prints figures; it asserts nothing. The targets are discussed in README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..authoring.corpus import fill_notebook, released_notebook, write_notebook
from ..authoring.released import run_nbgrader, scripts_on_path, write_course_skeleton
from ..grading.catalogue import mistakes_for

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENTS_DIR = ROOT / "assignments"
LOOP = "while True:\n    pass"


class PeakMemory:
    """Samples the resident memory of a process and all its descendants, keeping the peak."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval, self.peak, self.peak_pss = pid, interval, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        rounds = 0
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            if rounds % 10 == 0:  # PSS is costlier to read: every tenth sample
                self.peak_pss = max(self.peak_pss, tree_pss(self.pid))
            rounds += 1
            self._stop.wait(self.interval)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def tree_pss(root: int) -> int:
    """Sum of PSS (bytes) over the tree: shared pages split among the processes sharing them."""
    total = 0
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def tree_rss(root: int) -> int:
    """Sum of RSS (bytes) over ``root`` and every descendant (shared pages counted each time)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                total += int(handle.read().rsplit(")", 1)[1].split()[21]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total


def build_submissions(
    folder: Path, slug: str, count: int, loop: bool = True, released_dir: Path = ASSIGNMENTS_DIR
) -> dict[str, int]:
    """count submissions: the fourth loops (unless not ``loop``: it is then correct), the
    third is damaged, the rest alternate correct and mistaken; from the released notebooks
    in ``released_dir``. (A class of two or three, as a quick check runs, has no loop to
    wait out.)"""
    released = released_notebook(slug, released_dir)
    from attnkit.assignments import ASSIGNMENTS

    mistakes = [m for e in ASSIGNMENTS[slug].exercises for m in mistakes_for(slug, e.name)]
    correct = fill_notebook(released, slug)
    kinds = {"correct": 0, "mistake": 0, "timeout": 0, "damaged": 0}
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        path = folder / f"s{index:04d}_{slug}.ipynb"
        if index == 3 and loop:
            last = ASSIGNMENTS[slug].exercises[-1].name
            write_notebook(fill_notebook(released, slug, {last: LOOP}), path)
            kinds["timeout"] += 1
        elif index == 2:
            path.write_text('{"cells": [')
            kinds["damaged"] += 1
        elif index % 2 == 0 or not mistakes:
            write_notebook(correct, path)
            kinds["correct"] += 1
        else:
            mistake = mistakes[(index // 2) % len(mistakes)]
            write_notebook(fill_notebook(released, slug, {mistake.exercise: mistake.code}), path)
            kinds["mistake"] += 1
    return kinds


def timed(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[float, int, int, int]:
    """(wall seconds, peak RSS sum and peak PSS sum of the process tree in bytes, exit code)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    with PeakMemory(process.pid) as memory:
        code = process.wait()
    return time.perf_counter() - started, memory.peak, memory.peak_pss, code


def bench_attnkit(
    folder: Path, out: Path, jobs: int, timeout: float, profile: Path | None = None
) -> dict[str, Any]:
    """``attnkit grade`` of ``folder``; under py-spy (every grader, sandbox and worker
    process, as a flame graph in ``profile``) when ``profile`` is given."""
    command = [sys.executable, "-m", "attnkit", "grade", str(folder), "--out", str(out)]
    command += ["--jobs", str(jobs), "--timeout", str(timeout), "--cell-timeout", str(timeout)]
    if profile is not None:
        command = profiled(command, profile / "attnkit-grade.svg")
    wall, peak, pss, code = timed(command)
    records = json.loads((out / "grades.json").read_text())["submissions"]
    return {
        "wall": wall,
        "peak": peak,
        "pss": pss,
        "code": code,
        "graded": len(records),
        **time_spent(out),
    }


def profiled(command: list[str], flame: Path) -> list[str]:
    """``command`` under py-spy, every process it starts included, into the flame graph.
    --nonblocking: py-spy reads each process without stopping it; stopped under ptrace, a
    worker the sandbox kills (a call past its limit) left py-spy waiting."""
    record = [py_spy(), "record", "--subprocesses", "--nonblocking", "--rate", "100"]
    return [*record, "--format", "flamegraph", "--output", str(flame), "--", *command]


def time_spent(out: Path) -> dict[str, Any]:
    """The slowest submission, and each submission's phases and each cell's time (by its
    index in the notebook: every submission is built from the same one), summed over the
    run."""
    phases: dict[str, float] = {}
    cells: dict[str, float] = {}
    slowest = 0.0
    for path in (out / "results").glob("*/*.json"):
        run = json.loads(path.read_text()).get("run")
        if run is None:
            continue
        slowest = max(slowest, run["seconds"])
        for phase, seconds in run.get("phases", {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
        for cell, seconds in run.get("cell_seconds", {}).items():
            cells[cell] = cells.get(cell, 0.0) + seconds
    return {"slowest_submission": slowest, "phases": phases, "cells": cells}


def honest(folder: Path) -> list[Path]:
    """The submissions that neither loop nor are damaged (see build_submissions)."""
    found = sorted(folder.glob("*.ipynb"))
    return [p for p in found if not p.name.startswith(("s0002_", "s0003_"))]


def bench_nbgrader(folder: Path, slug: str, sample: int, work: Path) -> dict[str, float]:
    """nbgrader autograde on the first ``sample`` honest submissions (correct or mistaken)."""
    course = work / "course"
    write_course_skeleton(course, [slug])
    (course / "nbgrader_config.py").write_text(
        (course / "nbgrader_config.py").read_text() + "c.ExecutePreprocessor.timeout = 60\n"
    )
    run_nbgrader(course, "generate_assignment", slug, "--force", "--create")
    sampled = honest(folder)[:sample]
    for path in sampled:
        student = path.name.split("_")[0]
        target = course / "submitted" / student / slug / f"{slug}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    command = [sys.executable, "-m", "nbgrader", "autograde", slug, "--force"]
    wall, peak, pss, code = timed(command, cwd=course, env=scripts_on_path())
    return {"wall": wall, "peak": peak, "pss": pss, "code": code, "graded": len(sampled)}


def py_spy() -> str:
    """The py-spy that ``--profile`` samples with (the dev extra installs it)."""
    found = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if found is None:
        raise SystemExit("--profile needs py-spy: pip install -e '.[dev]' (or pip install py-spy)")
    return found


def shell_check(folder: Path, argument: str, repeats: int = 3) -> float:
    """Median wall seconds of ``attnkit check ARGUMENT`` run in ``folder`` (warm: the first
    run fills the disk cache too)."""
    walls = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "attnkit", "check", argument],
            cwd=folder,
            capture_output=True,
            check=False,
        )
        walls.append(time.perf_counter() - started)
    return statistics.median(walls[1:])


def bench_check(slug: str, work: Path, repeats: int = 3) -> dict[str, float]:
    notebook = write_notebook(
        fill_notebook(released_notebook(slug, ASSIGNMENTS_DIR), slug), work / f"{slug}.ipynb"
    )
    lesson1 = "01_numpy_attention"
    write_notebook(
        fill_notebook(released_notebook(lesson1, ASSIGNMENTS_DIR), lesson1),
        work / lesson1 / f"{lesson1}.ipynb",
    )
    from attnkit.notebook import Lesson
    from attnkit.notebook_run import load_definitions

    with contextlib.redirect_stdout(io.StringIO()):
        namespace, _, _ = load_definitions(notebook)
    lesson = Lesson(slug)
    in_notebook = []
    from attnkit.assignments import ASSIGNMENTS

    for exercise in ASSIGNMENTS[slug].exercises:
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            lesson.check(exercise.name, namespace=dict(namespace))
        in_notebook.append(time.perf_counter() - started)
    return {
        "check_cli": shell_check(notebook.parent, slug[:2], repeats),
        "check_cli_lesson1": shell_check(work / lesson1, "1", repeats),
        "in_notebook_max": max(in_notebook),
        "in_notebook_median": statistics.median(in_notebook),
    }


def mib(value: float) -> str:
    return f"{value / 1024**2:,.0f} MiB"


def where_time_went(ours: dict[str, Any], jobs: int, submissions: int) -> list[str]:
    """The phases, and the dearest cells, of the graded submissions."""
    busy = sum(ours["phases"].values())
    lines = [
        f"  where attnkit's time went ({jobs} graders): {busy:.1f} grader-seconds in "
        "submissions: "
        + ", ".join(
            f"{phase} {seconds:.1f} s"
            for phase, seconds in sorted(ours["phases"].items(), key=lambda kv: -kv[1])
        )
        + f"; the rest of {ours['wall'] * jobs:.1f} grader-seconds is start-up "
        "(the sandbox's zygote, the references) and coordination"
    ]
    dearest = sorted(ours["cells"].items(), key=lambda kv: -kv[1])[:5]
    lines.append(
        "  dearest cells (by index, mean over submissions): "
        + ", ".join(
            f"cell {cell} {seconds / submissions * 1000:.1f} ms" for cell, seconds in dearest
        )
    )
    return lines


def against_nbgrader(work: Path, slug: str, sample: int, ours: float) -> list[str]:
    """nbgrader autograde on a sample, and the ratio to ``ours`` (seconds a submission)."""
    theirs = bench_nbgrader(work / "subs", slug, sample, work)
    their_per = theirs["wall"] / max(theirs["graded"], 1)
    return [
        f"nbgrader autograde: {theirs['wall']:8.1f} s for {theirs['graded']} honest "
        f"submissions, {their_per:6.3f} s/submission, {1 / their_per:6.2f} submissions/s, "
        f"peak RSS {mib(theirs['peak'])} (PSS {mib(theirs['pss'])}), exit {theirs['code']}",
        f"throughput ratio (attnkit / nbgrader): {their_per / ours:.1f}x",
    ]


def beside(slug: str, count: int, per: float, work: Path, jobs: int, timeout: float) -> str:
    """The same measurement for another lesson, and its cost against the first one's."""
    folder = work / f"subs-{slug}"
    build_submissions(folder, slug, count)
    other = bench_attnkit(folder, work / f"out-{slug}", jobs, timeout)["wall"] / count
    return f"{slug}, {count} submissions: {other:.3f} s/submission, {other / per:.2f}x the first"


def small_and_beside(args: argparse.Namespace, per: float, work: Path) -> list[str]:
    """A class of 10, start-up included; and each lesson ``--beside``, against the first."""
    small = class_of(10, work / "subs", work, args.jobs, args.timeout)
    lines = [f"a class of 10, start-up included: {small:.1f} s"]
    for slug in args.beside:
        if slug and slug != args.assignment:
            lines.append(beside(slug, args.submissions, per, work, args.jobs, args.timeout))
    return lines


def class_of(count: int, folder: Path, work: Path, jobs: int, timeout: float) -> float:
    """Wall seconds for ``attnkit grade`` of the first ``count`` submissions: what a small
    class waits, start-up included."""
    small = work / f"class-of-{count}"
    small.mkdir()
    for path in honest(folder)[:count]:
        shutil.copyfile(path, small / path.name)
    return bench_attnkit(small, work / f"out-{count}", jobs, timeout)["wall"]


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The benchmark's command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", default="02_self_attention")
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--nbgrader-sample", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=5.0, help="attnkit's per-call timeout")
    parser.add_argument(
        "--beside",
        nargs="*",
        default=["05_watch_attention_learn", "06_attention_at_inference", "07_flash_attention"],
        metavar="LESSON",
        help="also grade as many submissions of each of these lessons and print their cost "
        "beside (none: --beside with no lesson)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="also write DIR/attnkit-grade.svg, a py-spy flame graph of every grader, sandbox "
        "and worker process, and DIR/summary.txt, these figures",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attnkit-bench-") as tmp:
        work = Path(tmp)
        kinds = build_submissions(work / "subs", args.assignment, args.submissions)
        say(
            f"assignment {args.assignment}: {args.submissions} submissions "
            f"({', '.join(f'{v} {k}' for k, v in kinds.items())}); {os.cpu_count()} cores"
        )
        ours = bench_attnkit(work / "subs", work / "out", args.jobs, args.timeout, args.profile)
        per = ours["wall"] / args.submissions
        say(
            f"attnkit grade   : {ours['wall']:8.1f} s total, {per:6.3f} s/submission, "
            f"{args.submissions / ours['wall']:6.2f} submissions/s, peak RSS {mib(ours['peak'])}"
            f" (PSS {mib(ours['pss'])}, {mib(ours['pss'] / args.jobs)} a grader with its "
            f"sandbox), slowest submission {ours['slowest_submission']:.1f} s"
            f" (timeout {args.timeout:g} s per call)"
        )
        for line in where_time_went(ours, args.jobs, args.submissions):
            say(line)
        for line in small_and_beside(args, per, work):
            say(line)
        for line in against_nbgrader(work, args.assignment, args.nbgrader_sample, per):
            say(line)
        student = bench_check(args.assignment, work)
        say(
            f"attnkit check {args.assignment[:2]} (shell, import included): "
            f"{student['check_cli']:.2f} s; attnkit check 1: {student['check_cli_lesson1']:.2f} s; "
            f"in-notebook check: median {student['in_notebook_median'] * 1000:.0f} ms, "
            f"slowest exercise {student['in_notebook_max'] * 1000:.0f} ms"
        )
    if args.profile is not None:
        (args.profile / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
