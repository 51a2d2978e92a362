"""Heatmap collection: the attention weights a student's own pipeline gives, and the
reference's, on the same inputs the grader chooses.

Every map is computed from what the student's code returned for inputs chosen here,
through the adapters (``impl.run``), never from anything else the sandbox reports. The
reference runs the very same calls, so the two maps differ exactly where the student's
pipeline does. Rendering them is :mod:`attnkit_autograder.classes.feedback`'s job.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import lessons
from ..lessons.heatmap_inputs import LEAK, Maps, sentence


def findings(weights: np.ndarray, reference: np.ndarray, causal: bool) -> list[str]:
    """What anyone can read off the map, spelled out: NaN, rows that do not sum to 1,
    (for causal attention) weight on later tokens, and where it differs from the
    reference's map. Facts about the values only, so a wrong pipeline never passes as right."""
    found = []
    with np.errstate(invalid="ignore"):
        gap = np.nan_to_num(np.abs(weights - reference), nan=np.inf)
    if gap.max() > 1e-4:
        i, j = np.unravel_index(np.argmax(gap), gap.shape)
        found.append(
            f"differs from the reference map by up to {gap[i, j]:.3g} "
            f"(query {i}, key {j}: {weights[i, j]:.3g} instead of {reference[i, j]:.3g})"
        )
    if not np.isfinite(weights).all():
        found.append(f"{int((~np.isfinite(weights)).sum())} weight(s) are NaN or infinite")
    sums = weights.sum(axis=-1)
    if np.isfinite(sums).all() and not np.allclose(sums, 1.0, atol=1e-3):
        found.append(f"rows sum to between {sums.min():.3g} and {sums.max():.3g}, not 1")
    if causal:
        future = np.triu(np.nan_to_num(np.abs(weights), nan=1.0), k=1)
        if future.max() > LEAK:
            i, j = np.unravel_index(np.argmax(future), future.shape)
            found.append(
                f"causal leak: {int((future > LEAK).sum())} weight(s) on later tokens, "
                f"the largest {future[i, j]:.3g} (query {i} looking at key {j})"
            )
    return found


def computed(maps: Maps, count: int, n: int) -> list[np.ndarray] | str:
    """A group's maps, or why they could not be drawn (the student's code may fail in any way,
    return anything, or be cut short: that is said, never raised)."""
    try:
        arrays = maps()
        if len(arrays) != count or any(np.shape(a) != (n, n) for a in arrays):
            return f"weights of shape {[list(np.shape(a)) for a in arrays]}, expected [{n}, {n}]"
        return [np.asarray(a, dtype=np.float64) for a in arrays]
    except Exception as exc:
        return f"{getattr(exc, 'type_name', type(exc).__name__)}: {exc}"[:200]


def collect_heatmap(slug: str, submission: Any, reference: Any) -> dict[str, Any] | None:
    """The student's and the reference's attention maps on the same inputs (or why not), one
    group of maps per exercise, each drawn or explained on its own."""
    if not (lessons.folder(slug) / "heatmaps.py").is_file():
        return None
    wiring = lessons.part(slug, "heatmaps")
    pipeline, causal = wiring.pipeline, wiring.CAUSAL
    _, labels = sentence()
    n = len(labels)
    maps = []
    for (titles, want), (_, got) in zip(
        pipeline(reference, n), pipeline(submission, n), strict=True
    ):
        expected = computed(want, len(titles), n)
        if isinstance(expected, str):
            raise RuntimeError(f"the reference pipeline failed: {expected}")
        student = computed(got, len(titles), n)
        for index, title in enumerate(titles):
            entry: dict[str, Any] = {"title": title, "reference": expected[index].tolist()}
            if isinstance(student, str):
                entry |= {"student": None, "student_error": student, "findings": []}
            else:
                weights = student[index]
                entry |= {
                    "student": weights.tolist(),
                    "findings": findings(weights, expected[index], causal),
                }
            maps.append(entry)
    return {"tokens": labels, "causal": causal, "maps": maps}
