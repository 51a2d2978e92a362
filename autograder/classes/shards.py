"""Slices of a class for many machines: which slice this machine grades, and who is in it.

A class of N shards is cut by who each submission is: a submission belongs to shard
``1 + (sha256(key) mod N)``, the key being the LMS's number for the student where its layout
gives one (a namesake's late arrival renames a Moodle participant ``Ada_4242``, never moves
her), else the submission's id. Every machine discovers the same files, computes the same
slices, and needs to talk to no one. A late file changes no one else's shard, only its own.

The shard is given with ``--shard I/N`` (1-based), or read from the engine that started the
process: Slurm's job arrays, Kubernetes' Indexed Jobs, AWS Batch's array jobs. The two
engines that do not say how many shards there are get the count from ``--shards N`` (or
``ATTNKIT_SHARDS``). Anything else is one :class:`~attnkit.errors.KitError` that names the
variable and what to do: never a guess.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from attnkit.errors import KitError

MAX_SHARDS = 100_000
"""More slices than any cluster runs at once; a count past it is a typo, refused."""

COUNT_VARIABLE = "ATTNKIT_SHARDS"
"""How Kubernetes' and AWS Batch's tasks learn the shard count (they say only the index)."""


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``count`` slices, and what chose it (the option or the
    engine's variable), which the run prints and records."""

    index: int
    count: int
    chosen_by: str = "--shard"

    @property
    def folder(self) -> str:
        """The folder inside OUT that holds this shard's results: ``shard-2-of-4``."""
        return f"shard-{self.index}-of-{self.count}"

    def __str__(self) -> str:
        return f"shard {self.index} of {self.count} (from {self.chosen_by})"


SHARD_TEXT = re.compile(r"([0-9]{1,6})/([0-9]{1,6})", re.ASCII)
FOLDER_NAME = re.compile(r"shard-([0-9]{1,6})-of-([0-9]{1,6})", re.ASCII)
NUMBER = re.compile(r"[0-9]{1,9}", re.ASCII)


def checked(index: int, count: int, chosen_by: str) -> Shard:
    if not 1 <= count <= MAX_SHARDS:
        raise KitError(
            f"{chosen_by} asks for {count} shards.",
            f"Give between 1 and {MAX_SHARDS} shards.",
        )
    if not 1 <= index <= count:
        raise KitError(
            f"{chosen_by} names shard {index} of {count}; shards are numbered 1 to {count}.",
            "Pass --shard I/N with 1 <= I <= N.",
        )
    return Shard(index, count, chosen_by)


def parse_shard(text: str) -> Shard:
    """``"2/4"`` as the second of four shards; anything else is refused with the form."""
    match = SHARD_TEXT.fullmatch(text.strip())
    if match is None:
        raise KitError(
            f"--shard {text!r} is not of the form I/N.",
            "Pass e.g. --shard 2/4 for the second of four shards.",
        )
    return checked(int(match[1]), int(match[2]), "--shard")


def parse_folder(name: str) -> Shard | None:
    """The shard a folder called ``shard-I-of-N`` holds, or None for any other name."""
    match = FOLDER_NAME.fullmatch(name)
    if match is None:
        return None
    index, count = int(match[1]), int(match[2])
    if not 1 <= index <= count <= MAX_SHARDS:
        return None
    shard = Shard(index, count, name)
    # Only the name the kit writes: shard-01-of-02 would be a second folder for shard 1.
    return shard if shard.folder == name else None


def number(env: Mapping[str, str], name: str) -> int:
    value = env[name].strip()
    if NUMBER.fullmatch(value) is None:
        raise KitError(
            f"the engine's variable {name}={env[name]!r} is not a whole number.",
            "Run the shard with --shard I/N instead.",
        )
    return int(value)


def from_slurm(env: Mapping[str, str]) -> Shard:
    """Slurm's array task without --shards: its id, counted from the array's first id, of
    the array's size. Arrays with a step (``--array=0-15:4``) or gaps cannot be told apart
    from missing tasks, so they are refused. (With --shards N, the id is the shard.)"""
    task = number(env, "SLURM_ARRAY_TASK_ID")
    if "SLURM_ARRAY_TASK_MIN" not in env or not (
        "SLURM_ARRAY_TASK_MAX" in env or "SLURM_ARRAY_TASK_COUNT" in env
    ):
        raise KitError(
            "SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_MIN and the array's size.",
            "Run the shard with --shard I/N instead.",
        )
    first = number(env, "SLURM_ARRAY_TASK_MIN")
    last = number(env, "SLURM_ARRAY_TASK_MAX") if "SLURM_ARRAY_TASK_MAX" in env else None
    count = number(env, "SLURM_ARRAY_TASK_COUNT") if "SLURM_ARRAY_TASK_COUNT" in env else None
    last = first + (count or 1) - 1 if last is None else last
    count = last - first + 1 if count is None else count
    if last - first + 1 != count or not first <= task <= last:
        raise KitError(
            f"the Slurm array runs {count} tasks over ids {first} to {last}, this one {task}: "
            "a shard per id needs consecutive ids.",
            "Submit the array as --array=1-N (what `attnkit slurm` writes).",
        )
    return checked(task - first + 1, count, "SLURM_ARRAY_TASK_ID")


def counted(env: Mapping[str, str], variable: str, shards: int | None) -> Shard:
    """An engine that gives a 0-based index only: the count comes from --shards N or
    ATTNKIT_SHARDS."""
    index = number(env, variable)
    if shards is None:
        if COUNT_VARIABLE not in env:
            raise KitError(
                f"{variable} gives this task's index but not how many shards there are.",
                f"Pass --shards N, or set {COUNT_VARIABLE}=N in the job's environment.",
            )
        shards = number(env, COUNT_VARIABLE)
    return checked(index + 1, shards, variable)


ENGINES = ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX")


def from_environment(env: Mapping[str, str], shards: int | None = None) -> Shard | None:
    """The shard the engine that started this process asks for, or None when no engine
    does (and no --shards N was given). Two engines at once is refused, not guessed."""
    present = [name for name in ENGINES if name in env]
    if len(present) > 1:
        raise KitError(
            f"the variables of two job engines are set ({', '.join(present)}).",
            "Pass --shard I/N to say which slice this task grades.",
        )
    if not present:
        if shards is not None:
            raise KitError(
                f"--shards {shards} is given, but no job engine's index is set "
                f"({', '.join(ENGINES)}).",
                "Pass --shard I/N to grade one slice by hand.",
            )
        return None
    if present[0] == "SLURM_ARRAY_TASK_ID":
        if shards is not None:
            # `sbatch --array=2` resubmits one task of `--array=1-4`: Slurm then says the
            # array is 2..2, so the count must come from --shards, and the id is the index.
            return checked(number(env, "SLURM_ARRAY_TASK_ID"), shards, "SLURM_ARRAY_TASK_ID")
        return from_slurm(env)
    return counted(env, present[0], shards)


def shard_of(submission_id: str, count: int) -> int:
    """The 1-based shard of a submission id: a digest of the id, so any two machines agree."""
    data = submission_id.encode("utf-8", "surrogatepass")
    return 1 + int.from_bytes(hashlib.sha256(data).digest()[:8], "big") % count


T = TypeVar("T")


def slice_of(items: Iterable[T], shard: Shard, key: Callable[[T], str]) -> list[T]:
    """The items (in their order) whose id, ``key(item)``, falls in ``shard``."""
    return [item for item in items if shard_of(key(item), shard.count) == shard.index]


def choose(text: str | None, count: int | None, env: Mapping[str, str]) -> Shard | None:
    """The slice a run grades: ``--shard I/N`` (``text``), else the job engine's variables
    (``count``: ``--shards N``), else none."""
    if text is not None:
        if count is not None:
            raise KitError("--shard and --shards are both given.", "Pass only --shard I/N.")
        return parse_shard(text)
    return from_environment(env, count)
