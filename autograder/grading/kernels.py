"""The kernels honest answers reach, per exercise: a kernel outside them is suspect.

Withholding (:mod:`.withholding`) proves that no exercise uses a library softmax or attention.
What it cannot know is a kernel nobody thought of that computes the whole answer under
another name. So each exercise that must be written by hand lists the PyTorch kernels that
the reference and every honest answer in the kit's corpora reach (each lesson folder's
``kernels_allowed.json``, written by ``python -m attnkit_autograder.grading.kernels OUT...``,
traced on the hidden suites). An
exercise that reaches a kernel no honest answer reaches is still graded on its values, with
a note for the instructor that names the kernels: a new name is treated as suspect, never as
allowed.

The names come from the recorder in the submission's process, so they are evidence for a
note, never for points.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from attnkit.assignments import ASSIGNMENTS

from .. import lessons

ALLOWED = "kernels_allowed.json"
"""Each lesson folder's list of the kernels its honest answers reach, by exercise."""
SHOWN = 8
"""Kernel names one note lists."""


@functools.cache
def allowed() -> dict[str, dict[str, frozenset[str]]]:
    """{assignment: {exercise: kernel names}} from each lesson folder's ALLOWED file."""
    found = {}
    for slug in ASSIGNMENTS:
        data = json.loads((lessons.folder(slug) / ALLOWED).read_text(encoding="utf-8"))
        found[slug] = {exercise: frozenset(names) for exercise, names in data.items()}
    return found


@functools.cache
def honest() -> frozenset[str]:
    """Every kernel an honest answer to some exercise reaches. A kernel is suspect when no
    honest answer to any exercise of the kit reaches it: an operation one lesson's answers
    use (a ``bmm``, a ``tril``) is no evidence against another's."""
    return frozenset().union(*(n for e in allowed().values() for n in e.values()))


def reached(calls: Mapping[str, Iterable[Any]]) -> dict[str, list[str]]:
    """{exercise: kernels its calls reached}, from the recorded calls' results."""
    found: dict[str, set[str]] = {}
    for exercise, recorded in calls.items():
        for call in recorded:
            outcome = getattr(call, "outcome", None) or {}
            names = outcome.get("kernels_reached") or []
            found.setdefault(exercise, set()).update(names)
    return {exercise: sorted(names) for exercise, names in found.items() if names}


@functools.cache
def elementary(name: str) -> bool:
    """Whether PyTorch tags the kernel (``aten.exp``, its in-place ``aten.exp_``) as pointwise
    or as a reduction: one such step cannot compute a softmax or an attention, whose every
    output depends on a whole row."""
    import torch

    namespace, _, op = name.partition(".")
    for candidate in (op, op.rstrip("_")):
        packet = getattr(getattr(torch.ops, namespace, None), candidate, None)
        overloads = packet.overloads() if packet is not None else []
        tags = {tag for o in overloads for tag in getattr(packet, o).tags}
        if tags & {torch.Tag.pointwise, torch.Tag.reduction}:
            return True
    return False


def suspect_notes(slug: str, by_exercise: Mapping[str, Iterable[str]]) -> list[str]:
    """A note for each exercise that reached a kernel no honest answer reaches."""
    notes = []
    for exercise, names in sorted(by_exercise.items()):
        traced = exercise in allowed().get(slug, {})
        new = sorted(n for n in set(names) - honest() if not elementary(n)) if traced else []
        if new:
            more = f" and {len(new) - SHOWN} more" if len(new) > SHOWN else ""
            notes.append(
                f"{exercise} reached PyTorch kernels that neither the reference nor any honest "
                f"answer the kit knows reaches: {', '.join(new[:SHOWN])}{more}. It is graded "
                "on its values; look at how it computes them"
            )
    return notes


def collect(outs: Iterable[Path]) -> dict[str, dict[str, set[str]]]:
    """The kernels each exercise reached in the graded results under ``outs``, from
    submissions that passed every hidden test of that exercise."""
    found: dict[str, dict[str, set[str]]] = {}
    for out in outs:
        for path in sorted(out.glob("results/*/*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            kernels = record.get("run", {}).get("kernels", {})
            for exercise, names in kernels.items():
                tests = [t for t in record.get("tests", []) if t.get("exercise") == exercise]
                if tests and all(t.get("status") == "passed" for t in tests):
                    found.setdefault(record["assignment"], {}).setdefault(exercise, set()).update(
                        names
                    )
    return found


def reference_kernels() -> dict[str, dict[str, set[str]]]:
    """The kernels each exercise's reference reaches on its hidden suite."""
    from attnkit.diagnosis import RecordingImplementation

    from .harness import reference_implementation, run_suite

    found: dict[str, dict[str, set[str]]] = {}
    for slug in ASSIGNMENTS:
        reference = reference_implementation(slug)
        recorder = RecordingImplementation(reference.inner)
        run_suite(recorder, slug, reference)
        for exercise, names in reached(recorder.calls).items():
            found.setdefault(slug, {}).setdefault(exercise, set()).update(names)
    return found


def traced(outs: Iterable[Path] = ()) -> dict[str, dict[str, set[str]]]:
    """What each lesson's file should hold: what it holds, and every kernel the references
    reach on the hidden suites and the honest answers graded into ``outs`` reach."""
    merged = {
        slug: {exercise: set(names) for exercise, names in exercises.items()}
        for slug, exercises in allowed().items()
    }
    for found in (reference_kernels(), collect(outs)):
        for slug, exercises in found.items():
            for exercise, names in exercises.items():
                merged.setdefault(slug, {}).setdefault(exercise, set()).update(names)
    return merged


def rendered(exercises: Mapping[str, Iterable[str]]) -> str:
    data = {exercise: sorted(names) for exercise, names in sorted(exercises.items())}
    return json.dumps(data, indent=1) + "\n"


def write(outs: Iterable[Path] = ()) -> list[Path]:
    """Rewrite each lesson's list (see :func:`traced`); the files that changed."""
    written = []
    for slug, exercises in traced(outs).items():
        path = lessons.folder(slug) / ALLOWED
        text = rendered(exercises)
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    allowed.cache_clear()
    honest.cache_clear()
    return written


def stale() -> list[str]:
    """A line per lesson whose list lacks a kernel its references reach."""
    return [
        f"{lessons.folder(slug) / ALLOWED} lacks kernels the references reach"
        for slug, exercises in traced().items()
        if rendered(exercises) != (lessons.folder(slug) / ALLOWED).read_text(encoding="utf-8")
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnkit_autograder.grading.kernels",
        description="Add to each lesson's kernels_allowed.json the kernels the references and "
        "the graded honest answers in OUT... reach.",
    )
    parser.add_argument("outs", nargs="*", type=Path, help="OUT folders of graded honest answers")
    args = parser.parse_args(argv)
    for path in write(args.outs):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
