"""What a grading run was asked to grade, kept in its output: ``OUT/class.json``.

Every ``attnkit grade`` writes it before grading. It holds the whole class (each
submission's id, where its result goes, the digest of its file), the folder it came from,
the options it was graded with, and a fingerprint of the hidden tests. A shard's copy also
says which slice it grades. From these files alone:

* ``attnkit merge`` knows who should have a result, even when a shard returned nothing;
* ``attnkit regrade`` grades the same class again, with the same options.

It is the kit's own file, read back with the same suspicion as any other: a file that is
not one is refused by name, never half-believed.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnkit import __version__
from attnkit.errors import KitError

from ..grading import options
from ..grading.options import GradeOptions
from ..grading.submission import Submission, sha256_file
from .hand_in import HandIn, hand_in_of
from .late import PolicyError, policy_from_dict
from .results import result_path, write_atomic
from .shards import Shard

SCHEMA = "attnkit-class/1"
NAME = "class.json"


def submission_id(submission: Submission) -> str:
    """The id that names a submission across machines: student and assignment (and, for a
    file of no known assignment, a digest of its path, as its result file has)."""
    return result_path(Path(), submission).relative_to("results").as_posix()


@dataclass(frozen=True)
class Member:
    """One submission of the class: its id, its result file under OUT, its file's digest,
    and when its platform says it was handed in (what the late policy reads)."""

    id: str
    result: str
    sha256: str
    handed_in: HandIn = field(default_factory=HandIn)
    shard_key: str = ""
    """What decides the member's shard, where it is not its id (see shards.shard_key)."""

    @property
    def sharded_by(self) -> str:
        return self.shard_key or self.id


def shard_key(submission: Submission) -> str:
    """What decides a submission's shard (see shards): the platform's number for the student
    where there is one (a namesake's late arrival renames a Moodle participant, never moves
    her), else the submission's id."""
    if submission.lms_number:
        return f"lms:{submission.lms_number}/{submission.assignment or 'unknown'}"
    return submission_id(submission)


def member(submission: Submission, root: Path) -> Member:
    key = shard_key(submission)
    return Member(
        id=submission_id(submission),
        shard_key="" if key == submission_id(submission) else key,
        result=result_path(Path(), submission).as_posix(),
        sha256=submission.sha256 or sha256_file(submission.path),
        handed_in=hand_in_of(submission, root),
    )


@dataclass(frozen=True)
class ClassManifest:
    """A grading run's ``class.json`` (see the module's docstring)."""

    submissions: str
    """SUBMISSIONS as an absolute path: where regrade finds the files again."""
    assignment: str | None
    options: GradeOptions
    """The grade options the class is graded with (time limits, memory, isolation, feedback)."""
    hidden_tests: str
    members: tuple[Member, ...]
    shard: Shard | None = None
    kit_version: str = __version__
    merged_from: tuple[str, ...] = field(default=())

    @property
    def stamp(self) -> str:
        """What this class's results are graded with (see :func:`stamp`)."""
        return stamp(self.hidden_tests, self.options)

    def same_class(self) -> dict[str, Any]:
        """What every shard of one class agrees on: all but the slice and the merge."""
        document = asdict(self)
        del document["shard"], document["merged_from"]
        return document

    def to_json(self) -> str:
        document = asdict(self)
        document["schema"] = SCHEMA
        document["shard"] = None if self.shard is None else asdict(self.shard)
        return json.dumps(document, indent=1, sort_keys=True) + "\n"


GRADING_PACKAGES = ("attnkit", "attnkit_solutions", "attnkit_autograder", "attnkit_data")
"""Everything that decides a grade besides the submission: the hidden suites, the
references, the rubric (the source notebooks' points), the mistake catalogue, the
comparisons, the sandbox, and the dataloader whose batches the hidden tests feed."""


GRADING_FILES = frozenset({".py", ".toml", ".json", ".ipynb", ".npz", ".ini", ".bin"})
"""The files of those packages that a wheel installs: an editable install and a wheel of the
same kit give the same fingerprint."""


@functools.cache
def hidden_tests_fingerprint() -> str:
    """A digest of the installed grading packages' files (see :data:`GRADING_PACKAGES`):
    any change to them, a kit upgrade included, gives another fingerprint."""
    digest = hashlib.sha256()
    for package in GRADING_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise KitError(f"the package {package} is not installed.", "Reinstall the kit.")
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*")):
            if (
                "__pycache__" in path.parts
                or path.suffix not in GRADING_FILES
                or not path.is_file()
            ):
                continue
            digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def option_problem(values: dict[str, Any]) -> str | None:
    """What is wrong with grading options (from the command line or a class.json), or None."""
    found = options.problem(values)
    if found is None and values["late_policy"] is not None:
        try:
            policy_from_dict(values["late_policy"])
        except PolicyError as exc:
            return f"the late policy is not usable: {exc.why}"
    return found


def stamp(hidden_tests: str, graded_with: GradeOptions) -> str:
    """What a result is graded with: the grading packages' fingerprint and the options it
    depends on, as one digest. Results of another stamp are not current."""
    text = json.dumps({"hidden_tests": hidden_tests, **graded_with.stamp_fields()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def of_run(
    root: Path,
    assignment: str | None,
    graded_with: GradeOptions,
    submissions: list[Submission],
    shard: Shard | None,
) -> ClassManifest:
    """The class.json of a grading run of the class under ``root`` (an absolute path)."""
    members = sorted((member(s, root) for s in submissions), key=lambda m: m.id)
    return ClassManifest(
        submissions=absolute(root),
        assignment=assignment,
        options=graded_with,
        hidden_tests=hidden_tests_fingerprint(),
        members=tuple(members),
        shard=shard,
    )


def read_if_any(out: Path) -> ClassManifest | None:
    """OUT's class.json, or None when there is none (or it is not one: it is then rewritten)."""
    try:
        return read(out)
    except KitError:
        return None


def write(out: Path, manifest: ClassManifest) -> None:
    write_atomic(out / NAME, manifest.to_json())


def refused(path: Path, why: str) -> KitError:
    return KitError(
        f"{path} is not a class file attnkit wrote ({why}).",
        "Grade the class again with `attnkit grade` into a fresh --out.",
    )


def text(value: Any, path: Path, name: str) -> str:
    if not isinstance(value, str):
        raise refused(path, f"{name} is not text")
    return value


def load(out: Path) -> dict[str, Any]:
    path = out / NAME
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise KitError(
            f"{out} holds no {NAME}: it is not the output of `attnkit grade` or "
            "`attnkit merge` (or was written by a kit older than 0.1).",
            "Pass the --out folder of a grading run.",
        ) from None
    except (OSError, ValueError) as exc:
        raise refused(path, f"unreadable: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise refused(path, f"not schema {SCHEMA}")
    return document


def read_members(value: Any, path: Path) -> tuple[Member, ...]:
    if not isinstance(value, list):
        raise refused(path, "members is not a list")
    members = []
    for entry in value:
        if not isinstance(entry, dict):
            raise refused(path, "a member is not an object")
        fields = [text(entry.get(k), path, k) for k in ("id", "result", "sha256")]
        result = Path(fields[1])
        # A result path is ours only when it is results/<folder>/<file>.json, nothing more.
        if (
            result.is_absolute()
            or len(result.parts) != 3
            or result.parts[0] != "results"
            or (".." in result.parts or result.suffix != ".json")
        ):
            raise refused(path, f"member result {fields[1]!r} is outside results/")
        key = entry.get("shard_key", "")
        if not isinstance(key, str) or len(key) > 300:
            raise refused(path, "a member's shard_key is not a short text")
        handed_in = read_hand_in(entry.get("handed_in"), path)
        members.append(Member(*fields, handed_in=handed_in, shard_key=key))
    if len({m.id for m in members}) != len(members) or len({m.result for m in members}) != len(
        members
    ):
        raise refused(path, "a member is listed twice")
    return tuple(members)


def read_hand_in(value: Any, path: Path) -> HandIn:
    if value is None:
        return HandIn()
    if not isinstance(value, dict) or not isinstance(value.get("late_mark", False), bool):
        raise refused(path, "a member's handed_in is malformed")
    at, source, problem = (text(value.get(k, ""), path, k) for k in ("at", "source", "problem"))
    return HandIn(at, source, value.get("late_mark", False), problem)


def read_shard(value: Any, path: Path) -> Shard | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(value.get(k), int) and not isinstance(value.get(k), bool)
        for k in ("index", "count")
    ):
        raise refused(path, "shard is not an index and a count")
    if not 1 <= value["index"] <= value["count"]:
        raise refused(path, "shard index out of range")
    return Shard(value["index"], value["count"], str(value.get("chosen_by", "")))


def read_options(value: Any, path: Path) -> GradeOptions:
    names = {spec.name for spec in options.fields()}
    if not isinstance(value, dict) or not names - set(options.OPTIONAL) <= set(value) <= names:
        raise refused(path, f"options are not exactly {', '.join(sorted(names))}")
    value = options.OPTIONAL | value
    problem = option_problem(value)
    if problem is not None:
        raise refused(path, problem)
    return options.from_dict(value)


def read(out: Path) -> ClassManifest:
    """OUT's ``class.json``, checked field by field, or one KitError naming the file."""
    path = out / NAME
    document = load(out)
    assignment = document.get("assignment")
    if not (assignment is None or isinstance(assignment, str)):
        raise refused(path, "assignment is not text")
    merged = document.get("merged_from", [])
    if not isinstance(merged, list) or not all(isinstance(m, str) for m in merged):
        raise refused(path, "merged_from malformed")
    return ClassManifest(
        submissions=text(document.get("submissions"), path, "submissions"),
        assignment=assignment,
        options=read_options(document.get("options"), path),
        hidden_tests=text(document.get("hidden_tests"), path, "hidden_tests"),
        members=read_members(document.get("members"), path),
        shard=read_shard(document.get("shard"), path),
        kit_version=text(document.get("kit_version"), path, "kit_version"),
        merged_from=tuple(merged),
    )


def absolute(path: Path) -> str:
    """SUBMISSIONS as regrade will need it from any working folder (links kept as given)."""
    return os.path.abspath(path)
