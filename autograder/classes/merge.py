"""``attnkit merge``: join the shards of one class into one gradebook, or refuse by name.

Each shard folder (``OUT/shard-I-of-N``) holds the class.json of the whole class and the
results of its slice. The merge believes no shard's word about who is in it: from the
class list it computes, for every submission, the shard that had to grade it, and takes
that shard's result only when it is a current one (the same file's digest, no fault of the
grader). Every missing shard, every submission without a current result, and every result
found in two shards is named, and nothing is written. Otherwise the results are copied into
OUT and ``grades.json`` and ``grades.csv`` are written by the same code as a one-machine
run, from the same result files: the same bytes.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import one_line

from ..grading.submission import Submission
from . import late, results, run_manifest, shards
from .discovery import OUT_MARKER
from .run_manifest import ClassManifest, Member
from .shards import Shard


@dataclass
class Found:
    """The shard folders given, read: their class files, and the folders with none."""

    manifests: dict[Path, ClassManifest] = field(default_factory=dict)
    empty: dict[Path, Shard] = field(default_factory=dict)


def shard_folders(paths: list[Path]) -> list[Path]:
    """The shard folders ``paths`` name: themselves, or the ``shard-I-of-N`` inside them.
    A shard folder must be a real folder: a link could put two names on one folder, or
    take the merge somewhere else."""
    folders: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise KitError(f"{path} is not a folder.", "Pass OUT or its shard folders.")
        if shards.parse_folder(path.name) is not None:
            folders.append(path)
            continue
        inside = sorted(p for p in path.iterdir() if shards.parse_folder(p.name))
        if not inside:
            raise KitError(
                f"{path} is not a shard folder (shard-I-of-N) and holds none.",
                "Pass the --out folder of `attnkit grade --shard`, or its shard folders.",
            )
        folders += inside
    unique: dict[Path, Path] = {}
    for folder in folders:
        if folder.is_symlink() or not folder.is_dir():
            raise KitError(
                f"{folder} is a link or not a folder: shard folders must be the folders "
                "`attnkit grade --shard` wrote.",
                "Replace it with the folder itself (or leave it out of the merge).",
            )
        unique.setdefault(folder.resolve(), folder)
    return list(unique.values())


def read_shards(folders: list[Path]) -> Found:
    """Each folder's class.json; a folder without one (its node returned nothing) is empty."""
    found = Found()
    for folder in folders:
        shard = shards.parse_folder(folder.name)
        assert shard is not None
        if not (folder / run_manifest.NAME).exists():
            found.empty[folder] = shard
            continue
        manifest = run_manifest.read(folder)
        if manifest.shard is None or (manifest.shard.index, manifest.shard.count) != (
            shard.index,
            shard.count,
        ):
            raise KitError(
                f"{folder / run_manifest.NAME} does not describe {shard.folder}.",
                "Leave shard folders as `attnkit grade --shard` wrote them.",
            )
        found.manifests[folder] = manifest
    return found


def one_class(found: Found) -> tuple[ClassManifest, int]:
    """The class all the shards graded, and their count, or a refusal naming the odd one."""
    if not found.manifests:
        raise KitError(
            "no shard has written its class file yet: nothing was graded.",
            "Run the shards (attnkit grade --shard I/N, or the sbatch script) first.",
        )
    (first, manifest), *others = found.manifests.items()
    assert manifest.shard is not None
    count = manifest.shard.count
    for folder, other in others:
        assert other.shard is not None
        if other.shard.count != count:
            raise KitError(
                f"{first} is one of {count} shards, {folder} one of "
                f"{other.shard.count}: they are two different splits.",
                "Move the folders of the old split away, or merge each split on its own.",
            )
        differing = [k for k, v in other.same_class().items() if manifest.same_class()[k] != v]
        if differing:
            raise KitError(
                f"{first} and {folder} graded different classes (they differ in "
                f"{', '.join(differing)}).",
                "Grade every shard with the same command, the same kit and the same files.",
            )
    for folder, shard in found.empty.items():
        if shard.count != count:
            raise KitError(
                f"{folder} belongs to a split into {shard.count} shards, not {count}.",
                "Move the folders of the old split away.",
            )
    return manifest, count


def still_running(folder: Path) -> bool:
    """Whether an ``attnkit grade`` holds this folder's lock now."""
    try:
        with open(folder / OUT_MARKER, "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    except OSError:
        return False
    return False


@dataclass
class Plan:
    """Where every member's result comes from, and what stops the merge."""

    sources: dict[str, Path] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def plan_merge(found: Found, manifest: ClassManifest, count: int) -> Plan:
    plan = Plan()
    folders_of: dict[int, list[Path]] = {}
    for folder, shard in [
        *((f, m.shard) for f, m in found.manifests.items()),
        *found.empty.items(),
    ]:
        assert shard is not None
        folders_of.setdefault(shard.index, []).append(folder)
    for index, folders in sorted(folders_of.items()):
        if len(folders) > 1:
            plan.problems.append(
                f"shard {index} of {count} is in {len(folders)} folders "
                f"({', '.join(map(str, folders))}): merge only one of them"
            )
    by_index = {
        index: folders[0] for index, folders in folders_of.items() if folders[0] in found.manifests
    }
    missing_shards = sorted(set(range(1, count + 1)) - set(by_index))
    for index in missing_shards:
        members = [
            describe(m) for m in manifest.members if shards.shard_of(m.sharded_by, count) == index
        ]
        named = ", ".join(members[:10]) + (
            f" and {len(members) - 10} more" if len(members) > 10 else ""
        )
        plan.problems.append(
            f"shard {index} of {count} returned nothing ({len(members)} submission(s)"
            f"{': ' + named if members else ''}): rerun it "
            f"(attnkit grade ... --shard {index}/{count}, or sbatch --array={index} ...)"
        )
    for folder in by_index.values():
        if still_running(folder):
            plan.problems.append(f"{folder} is still being graded: wait for it to end")
    # Each folder's result files, listed once: a member's result is read only where it is.
    held = {
        folder: {p.relative_to(folder).as_posix() for p in folder.glob("results/*/*.json")}
        for folder in by_index.values()
    }
    for member in manifest.members:
        index = shards.shard_of(member.sharded_by, count)
        current = [
            folder
            for folder in by_index.values()
            if member.result in held[folder]
            and usable(folder / member.result, member, manifest.stamp)
        ]
        home = by_index.get(index)
        if len(current) > 1 or (current and current[0] != home):
            plan.problems.append(
                f"{describe(member)}: duplicated, a result in "
                f"{', '.join(f.name for f in current)} (only shard {index} grades it)"
            )
        elif current:
            plan.sources[member.id] = current[0] / member.result
        elif home is not None:
            why = why_missing(home / member.result, member, manifest.stamp)
            plan.problems.append(f"{describe(member)}: {why}")
    return plan


def belongs_to(record: dict[str, Any], member: Member) -> bool:
    """Whether a well-formed result says it is the result of ``member``: its student and
    assignment (and file, for an unknown assignment) give the member's result path."""
    claimed = Submission(record["student"], record["assignment"], Path(record["source"]))
    return results.result_path(Path(), claimed).as_posix() == member.result


def usable(path: Path, member: Member, stamp: str) -> bool:
    """A current result of ``member``'s file (graded with ``stamp``), fit for the gradebook,
    that is about it."""
    record = results.read_record(path)
    return (
        record is not None
        and results.is_current(record, member.sha256, stamp=stamp)
        and results.record_problem(record) is None
        and belongs_to(record, member)
    )


def describe(member: Member) -> str:
    return one_line(member.id.removesuffix(".json"))


def why_missing(path: Path, member: Member, stamp: str) -> str:
    why = results.why_not_current(path, member.sha256, stamp)
    if why == "no result was recorded":
        return f"no result in {path.parent.parent.parent.name}"
    if why is not None:
        return why
    record = results.read_record(path) or {}
    problem = results.record_problem(record) or "it names another submission"
    return f"its result file is not one the grader wrote ({problem})"


def place(source: Path, target: Path) -> None:
    """``source``'s result at ``target``, atomically: a hard link where both are on one file
    system (nothing to copy or sync), else a copy written as every result is."""
    if source.resolve() == target.resolve():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.link")
    try:
        os.link(source, temporary)
    except OSError:
        results.write_atomic(target, source.read_text(encoding="utf-8"))
        return
    try:
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def in_the_way(out: Path, manifest: ClassManifest) -> list[str]:
    """What in OUT is not what a result needs (a link or a file where a folder goes, a folder
    where a result goes): checked before anything is placed, so a merge that could not
    finish changes nothing."""
    blocked = []
    folders = {out / "results"} | {out / Path(m.result).parent for m in manifest.members}
    for folder in sorted(folders):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            blocked.append(f"{folder} is in the way: it should be a folder of results")
    for member in manifest.members:
        target = out / member.result
        if target.is_dir() and not target.is_symlink():
            blocked.append(f"{target} is in the way: it should be a result file")
    return blocked


def conflict(out: Path, manifest: ClassManifest) -> str | None:
    """Why merging into OUT would go back in time: OUT's own gradebook was graded with
    other grading packages than the shards (an accepted regrade, a kit upgrade)."""
    existing = run_manifest.read_if_any(out)
    if existing is None or existing.shard is not None:
        return None
    if existing.hidden_tests != manifest.hidden_tests:
        return (
            f"{out}'s gradebook was graded with other grading packages "
            f"({existing.hidden_tests}) than these shards ({manifest.hidden_tests}): merging "
            "them would replace newer grades with older ones"
        )
    return None


def write_merged(out: Path, manifest: ClassManifest, plan: Plan, folders: list[Path]) -> None:
    """Copy the results into OUT, then write its gradebook and class.json (atomically)."""
    with results.exclusive(out):
        try:
            for member in manifest.members:
                place(plan.sources[member.id], out / member.result)
        except OSError as exc:
            raise KitError(
                f"cannot place the results in {out}: {exc}.",
                "Fix that and merge again; the gradebook files were not written.",
            ) from None
        merged = replace(
            manifest,
            shard=None,
            merged_from=tuple(sorted(f.name for f in folders)),
        )
        adjust = late.gradebook_adjuster(manifest, out)
        results.write_gradebook(out, [out / m.result for m in manifest.members], adjust)
        run_manifest.write(out, merged)


def merge(paths: list[Path], out: Path | None) -> tuple[Path, ClassManifest]:
    """Merge the shards under ``paths`` into ``out``; a KitError lists what stops it."""
    folders = shard_folders(paths)
    if out is None:
        parents = {f.parent for f in folders}
        if len(parents) != 1:
            raise KitError(
                "the shard folders are in different places.", "Say where to merge with --out."
            )
        out = parents.pop()
    found = read_shards(folders)
    manifest, count = one_class(found)
    plan = plan_merge(found, manifest, count)
    clash = conflict(out, manifest)
    if clash is not None:
        raise KitError(clash + ".", "Merge into a new --out, or regrade the class instead.")
    plan.problems += in_the_way(out, manifest)
    if plan.problems:
        raise KitError(
            f"the shards of {out} are incomplete, so no gradebook was written:\n  "
            + "\n  ".join(plan.problems[:200])
            + (f"\n  ... and {len(plan.problems) - 200} more" if len(plan.problems) > 200 else ""),
            "Rerun the shards named above (graded work is kept), then merge again.",
        )
    write_merged(out, manifest, plan, folders)
    if manifest.options.feedback:
        from . import feedback

        reports = feedback.write_feedback(out)
        print(f"wrote {len(reports)} feedback reports in {out / 'feedback'}")
    return out, manifest
