"""Turn self-check results into text for a notebook cell or a terminal."""

from __future__ import annotations

from .runner import NOT_IMPLEMENTED, PASSED, Outcome

NOT_A_GRADE = "(visible checks only: your grade comes from the hidden tests)"


def exercise_status(results: list[Outcome]) -> str:
    """One word for an exercise: passed, not implemented, missing, or failed."""
    if not results:
        return "no checks"
    if all(r.status == PASSED for r in results):
        return PASSED
    if results[0].status in (NOT_IMPLEMENTED, "missing"):
        return results[0].status
    return "failed"


def render_exercise(name: str, results: list[Outcome], verbose: bool = True) -> str:
    status = exercise_status(results)
    if status == NOT_IMPLEMENTED:
        return f"{name}: not implemented yet. Fill in its cell, run it, then run this check again."
    if status == "missing":
        return f"{name}: {results[0].message}"
    passed = sum(r.status == PASSED for r in results)
    lines = [f"{name}: {passed} of {len(results)} visible checks pass"]
    if verbose or status != PASSED:
        for result in results:
            mark = "ok" if result.status == PASSED else result.status.upper()
            lines.append(f"  [{mark}] {result.check}")
            if result.message:
                lines.append(f"        {result.message}")
            if result.diagnosis:
                lines.append(f"        looks like a classic mistake: {result.diagnosis}")
            if result.hint:
                lines.append(f"        hint: {result.hint}")
    return "\n".join(lines)


def render_table(title: str, rows: list[tuple[str, list[Outcome]]]) -> str:
    """A table with one row per exercise, then the details of anything not passing."""
    width = max([len(name) for name, _ in rows] + [8])
    lines = [title, f"  {'exercise':<{width}}  result", f"  {'-' * width}  {'-' * 24}"]
    details = []
    for name, results in rows:
        status = exercise_status(results)
        passed = sum(r.status == PASSED for r in results)
        summary = status if status != "failed" else f"failed ({passed}/{len(results)} pass)"
        if status == PASSED:
            summary = f"passed ({passed}/{len(results)})"
        lines.append(f"  {name:<{width}}  {summary}")
        if status not in (PASSED, NOT_IMPLEMENTED):
            details.append(render_exercise(name, results, verbose=False))
    if details:
        lines += ["", *details]
    lines += ["", NOT_A_GRADE]
    return "\n".join(lines)
