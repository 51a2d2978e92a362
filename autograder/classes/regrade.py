"""``attnkit regrade``: grade a class again with the installed hidden tests, and say whose
grade moved.

After the hidden tests, the rubric or the kit change, the class in OUT's class.json is
graded again, from the same SUBMISSIONS with the same options, into ``OUT/regrade`` (or a
shard of it, ``OUT/regrade/shard-I-of-N``, merged by a later plain ``attnkit regrade``).
The old gradebook stays where it is. A change report, ``OUT/regrade/changes.txt`` and
``changes.json``, names every submission whose points moved, on which graded cell, with
the old and the new message. ``attnkit regrade OUT --accept`` then keeps the old files in
``OUT/previous/<time>/`` and moves the new ones in.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import one_line

from ..grading import per_student
from . import grade as grade_command
from . import merge, results, run_manifest, shards
from .run_manifest import ClassManifest
from .shards import Shard

FOLDER = "regrade"
ACCEPTED = ("grades.json", "grades.csv", "results", "feedback", run_manifest.NAME)
"""What a gradebook is made of: what --accept keeps aside and moves in."""


# -- the change report -------------------------------------------------------------------------


@dataclass(frozen=True)
class CellChange:
    grade_id: str
    old_points: float | None
    new_points: float | None
    old_message: str
    new_message: str


@dataclass(frozen=True)
class Change:
    """One submission whose points (or status) moved."""

    student: str
    assignment: str | None
    old_score: float | None
    new_score: float | None
    old_status: str | None
    new_status: str | None
    cells: tuple[CellChange, ...]


def by_cell(record: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    if record is None:
        return {}
    return {t["grade_id"]: t for t in record.get("tests", []) if isinstance(t, dict)}


def compare(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Change | None:
    """The change between two results of one submission, or None if its points held."""
    before, after = by_cell(old), by_cell(new)
    cells = []
    # A submission that came or went changed as a whole: no cell-by-cell list.
    for grade_id in sorted(set(before) | set(after)) if old and new else ():
        a, b = before.get(grade_id, {}), after.get(grade_id, {})
        if a.get("points") != b.get("points"):
            cells.append(
                CellChange(
                    grade_id,
                    a.get("points"),
                    b.get("points"),
                    str(a.get("message") or a.get("status") or "no such cell"),
                    str(b.get("message") or b.get("status") or "no such cell"),
                )
            )
    score = tuple(None if r is None else r.get("score") for r in (old, new))
    status = tuple(None if r is None else r.get("status") for r in (old, new))
    if not cells and score[0] == score[1] and status[0] == status[1]:
        return None
    either = new or old or {}
    return Change(
        str(either.get("student")), either.get("assignment"), *score, *status, tuple(cells)
    )


def changes_of(out: Path, new: Path, old: ClassManifest, manifest: ClassManifest) -> list[Change]:
    """Every submission whose points or status moved, among those of either gradebook: one
    that left SUBMISSIONS since is a change too (its result goes)."""
    before, after = gradebook_of(out, old), gradebook_of(new, manifest)
    found = []
    for result in sorted(before.keys() | after.keys()):
        change = compare(before.get(result), after.get(result))
        if change is not None:
            found.append(change)
    return sorted(found, key=lambda c: (c.student, c.assignment or ""))


def gradebook_of(folder: Path, manifest: ClassManifest) -> dict[str, dict[str, Any] | None]:
    """Each member's public record in ``folder`` as its gradebook has it, by result path:
    only a current result counts (a grader's failure, or a result of other tests, is no
    row there, so None)."""
    return {
        m.result: results.read_result(folder / m.result)
        if merge.usable(folder / m.result, m, manifest.stamp)
        else None
        for m in manifest.members
    }


def printable_change(change: Change) -> Change:
    """``change`` with every text one line of printable characters: a student's file name
    (their id) can neither end its line of the report nor forge another."""
    cells = tuple(
        CellChange(
            one_line(c.grade_id),
            c.old_points,
            c.new_points,
            one_line(c.old_message),
            one_line(c.new_message),
        )
        for c in change.cells
    )
    return replace(
        change,
        student=one_line(change.student),
        assignment=None if change.assignment is None else one_line(change.assignment),
        old_status=None if change.old_status is None else one_line(change.old_status),
        new_status=None if change.new_status is None else one_line(change.new_status),
        cells=cells,
    )


def status_change(change: Change) -> str:
    if change.new_status is None:
        return " (its file has left SUBMISSIONS)"
    if change.old_status is None:
        return " (new in SUBMISSIONS)"
    if change.old_status != change.new_status:
        return f" [{change.old_status} -> {change.new_status}]"
    return ""


def points(value: float | None) -> str:
    return "no result" if value is None else f"{value:g}"


def report_text(changes: list[Change], old: ClassManifest, new: ClassManifest) -> str:
    either = {m.result for m in old.members} | {m.result for m in new.members}
    lines = [
        f"{len(changes)} of {len(either)} submission(s) changed grade "
        f"(hidden tests {old.hidden_tests} -> {new.hidden_tests}, "
        f"kit {old.kit_version} -> {new.kit_version})"
    ]
    for change in map(printable_change, changes):
        delta = ""
        if isinstance(change.old_score, int | float) and isinstance(change.new_score, int | float):
            delta = f" ({change.new_score - change.old_score:+g})"
        lines.append(
            f"  {change.student} {change.assignment or '(unknown assignment)'}: "
            f"{points(change.old_score)} -> {points(change.new_score)}{delta}"
            + status_change(change)
        )
        for cell in change.cells:
            lines.append(
                f"    {cell.grade_id}: {points(cell.old_points)} -> {points(cell.new_points)}"
            )
            lines.append(f"      was: {cell.old_message[:300]}")
            lines.append(f"      now: {cell.new_message[:300]}")
    return "\n".join(lines) + "\n"


def class_digest(out: Path) -> str:
    """The digest of OUT's class.json: which gradebook a regrade was compared with."""
    try:
        return hashlib.sha256((out / run_manifest.NAME).read_bytes()).hexdigest()
    except OSError:
        return ""


def write_report(out: Path, new: Path, old: ClassManifest, manifest: ClassManifest) -> str:
    changes = changes_of(out, new, old, manifest)
    text = report_text(changes, old, manifest)
    document = {
        "schema": "attnkit-changes/1",
        "base": class_digest(out),
        "hidden_tests": {"old": old.hidden_tests, "new": manifest.hidden_tests},
        "kit_version": {"old": old.kit_version, "new": manifest.kit_version},
        "submissions": len({m.result for m in (*old.members, *manifest.members)}),
        "changed": [asdict(c) for c in changes],
    }
    results.write_atomic_files(
        {
            new / "changes.txt": text,
            new / "changes.json": json.dumps(document, indent=1, sort_keys=True) + "\n",
        }
    )
    return text


# -- grading again -----------------------------------------------------------------------------


def regrade_request(
    manifest: ClassManifest,
    out: Path,
    jobs: int | None,
    shard: Shard | None,
    isolation: dict[str, Any],
    course_secret: Path | None,
) -> grade_command.GradeRequest:
    """The class again, as class.json recorded it, into ``out``. Isolation comes from the
    regrade's own command line (``isolation``: ``no_sandbox`` and ``sandbox_user``), never
    from a file in OUT: a regrade is in bubblewrap unless the instructor asks again for
    something weaker."""
    options = manifest.options
    for name, flag in (("no_sandbox", "--no-sandbox"), ("sandbox_user", "--sandbox-user")):
        if getattr(options, name) and getattr(options, name) != isolation[name]:
            print(
                f"note: the first grading ran with {flag}; this regrade does not, unless you "
                f"pass {flag} again",
                file=sys.stderr,
            )
    options = replace(options, **isolation)
    secret = secret_for(manifest, out.parent, course_secret)
    options = replace(options, seed_per_student=None if secret is None else secret.digest)
    return grade_command.GradeRequest(
        submissions=Path(manifest.submissions),
        out=out,
        options=options,
        assignment=manifest.assignment,
        jobs=jobs,
        shard=shard,
        secret=secret,
        # The regraded run's OUT (the old results) is private too, as is the gradebook.
        instructor_files=tuple(
            Path(p) for p in (options.gradebook, out.parent) if isinstance(p, str | Path)
        ),
    )


def secret_for(
    manifest: ClassManifest, out: Path, given: Path | None
) -> per_student.CourseSecret | None:
    """The course secret of a regrade, which grades with per-student inputs exactly when the
    first grading did (class.json says so); the secret itself must be given again."""
    recorded = manifest.options.seed_per_student
    if not recorded:
        if given is not None:
            print(
                "note: the first grading gave every student the same inputs; this regrade "
                "does too, and --course-secret is not used",
                file=sys.stderr,
            )
        return None
    if given is None and per_student.SECRET_VARIABLE not in os.environ:
        raise per_student.CourseSecretError(
            f"{out} was graded with --seed-per-student, and a regrade needs its course "
            "secret again.",
            f"Pass --course-secret FILE (or set ${per_student.SECRET_VARIABLE}).",
        )
    secret = per_student.read_secret(given, os.environ)
    if secret.digest != recorded:
        print(
            f"note: this course secret (digest {secret.digest}) is not the one the class was "
            f"graded with (digest {recorded}): every student's hidden inputs change",
            file=sys.stderr,
        )
    return secret


def keep_others(
    out: Path, request: grade_command.GradeRequest, old: ClassManifest
) -> grade_command.GradeRequest:
    """Give the regrade (``request``, with ``only``) the results of every student it does
    not name, as OUT holds them, so that only the students named are graded again; refused
    with a shard, or when OUT's results were graded with other hidden tests or options (the
    class would mix two gradings)."""
    target, only = request.out, request.only
    if request.shard is not None:
        raise KitError("--only takes no shard.", "Give one or the other.")
    if old.stamp != grade_command.settings_of(request).stamp:
        raise KitError(
            f"the hidden tests, the kit or the grading options changed since {out} was "
            "graded: a regrade of some students would mix two gradings in one gradebook.",
            f"Regrade the whole class: `attnkit regrade {out}` without --only.",
        )
    for member in old.members:
        source, copy = out / member.result, target / member.result
        record = results.read_record(source)
        if record is None or record.get("student") in only or copy.exists():
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        results.write_atomic(copy, source.read_text(encoding="utf-8"))
    return request


def check_same_class(old: ClassManifest, new: ClassManifest, submissions: str) -> None:
    """Refuse to report on a class that is not the one graded before: the files moved."""
    before = {m.id: m.sha256 for m in old.members}
    after = {m.id: m.sha256 for m in new.members}
    if before != after:
        gone = sorted(set(before) - set(after))
        added = sorted(set(after) - set(before))
        changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
        print(
            f"note: {submissions} changed since the first grading ({len(gone)} gone, "
            f"{len(added)} new, {len(changed)} changed); the report compares what is there now",
            file=sys.stderr,
        )


def regrade(
    out: Path,
    *,
    jobs: int | None = None,
    shard: Shard | None = None,
    isolation: dict[str, Any] | None = None,
    course_secret: Path | None = None,
    only: tuple[str, ...] = (),
) -> int:
    """Grade OUT's class again into OUT/regrade (or one shard of it) and write the change
    report; the exit status. ``isolation`` holds ``no_sandbox`` and ``sandbox_user``;
    ``only`` names the students graded again (the others' results are OUT's own)."""
    old = run_manifest.read(out)
    if old.shard is not None:
        raise KitError(
            f"{out} is one shard of a class.",
            "Merge the shards first (attnkit merge), then regrade.",
        )
    target = out / FOLDER
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise KitError(
            f"{target} is in the way: it should be the regrade's own folder.",
            "Move it away and regrade again.",
        )
    # A report stands for a whole regrade: the last one goes before anything is graded.
    for name in ("changes.txt", "changes.json"):
        report = target / name
        if report.is_dir() and not report.is_symlink():
            raise KitError(f"{report} is in the way.", "Move it away and regrade again.")
        report.unlink(missing_ok=True)
    isolation = isolation or {"no_sandbox": False, "sandbox_user": None}
    request = regrade_request(old, target, jobs, shard, isolation, course_secret)
    if only:
        request = keep_others(out, replace(request, only=only), old)
    pieces = target.is_dir() and any(shards.parse_folder(p.name) for p in target.iterdir())
    if shard is not None:
        return grade_command.grade(request).code
    if pieces:
        merge.merge([target], target)
        if run_manifest.read(target).stamp != grade_command.settings_of(request).stamp:
            raise KitError(
                f"the shards in {target} were graded with other hidden tests or options than "
                "this regrade's.",
                f"Delete {target} and regrade again.",
            )
    else:
        code = grade_command.grade(request).code
        if code not in (0, grade_command.UNREADABLE_TIMES):
            print("the regrade is incomplete: no change report was written", file=sys.stderr)
            return code
    new = run_manifest.read(target)
    check_same_class(old, new, old.submissions)
    text = write_report(out, target, old, new)
    print(text, end="")
    print(
        f"wrote {target / 'changes.txt'} and {target / 'changes.json'}; the grades in {out} "
        f"are unchanged until `attnkit regrade {out} --accept`"
    )
    return 0


def finished_regrade(out: Path) -> ClassManifest:
    """OUT/regrade's class, when it holds a whole regrade compared with OUT's gradebook as it
    is now; otherwise one KitError that says what to run."""
    target = out / FOLDER
    again = f"Run `attnkit regrade {out}` (it resumes), then accept."
    try:
        report = json.loads((target / "changes.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise KitError(f"{out} holds no finished regrade (no change report).", again) from None
    if not isinstance(report, dict) or report.get("base") != class_digest(out):
        raise KitError(
            f"{out} was graded again since its regrade was made: the regrade is stale.", again
        )
    new = run_manifest.read(target)
    absent = [m for m in new.members if not merge.usable(target / m.result, m, new.stamp)]
    if new.shard is not None or absent or not (target / "grades.json").is_file():
        raise KitError(f"the regrade in {target} is incomplete.", again)
    return new


def accept(out: Path) -> tuple[ClassManifest, list[dict[str, Any]]]:
    """Keep OUT's gradebook in OUT/previous/<time>/ and move the regrade's into OUT: the
    class, and its rows as the gradebook now holds them."""
    target = out / FOLDER
    new = finished_regrade(out)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    kept = out / "previous" / stamp
    with results.exclusive(out):
        try:
            if (out / "previous").is_symlink():
                raise NotADirectoryError(f"{out / 'previous'} is a link")
            kept.mkdir(parents=True)
        except OSError as exc:
            raise KitError(
                f"cannot keep the old gradebook in {kept}: {exc}.",
                f"Make {out / 'previous'} a folder (or move it away); nothing was changed.",
            ) from None
        old_shards = [p.name for p in out.iterdir() if shards.parse_folder(p.name)]
        moves = [(out / name, kept / name) for name in (*ACCEPTED, *old_shards)]
        moves += [(target / name, out / name) for name in ACCEPTED]
        moves += [(target / n, kept / n) for n in ("changes.txt", "changes.json")]
        moves.append((target, kept / FOLDER))  # its logs and shard folders
        done: list[tuple[Path, Path]] = []
        try:
            for source, destination in moves:
                if source.exists():
                    os.replace(source, destination)
                    done.append((source, destination))
        except BaseException as exc:
            # An error or an interrupt: every move is undone, and OUT is as it was.
            for source, destination in reversed(done):
                os.replace(destination, source)
            kept.rmdir()
            if isinstance(exc, OSError):
                raise KitError(
                    f"cannot move the regrade into {out}: {exc}.", "Nothing was changed."
                ) from None
            raise
    print(f"the regrade is now the gradebook of {out}; the old one is kept in {kept}")
    return new, grade_command.class_records(out, new)
