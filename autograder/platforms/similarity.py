"""The similarity review of ``attnkit report``: which submissions of one assignment share
code that the released notebook did not give them, ranked for an instructor to read.

What is compared is each student's *own code*: the code cells of the graded file, less
every line that the released notebook's code cells hold (the stubs, the docstrings, the
given cells, the checks). copydetect fingerprints it by winnowing k-grams of its tokens,
names, strings, layout and comments normalised away (so renamed variables, reformatted
lines and new comments still match), with the released code's own fingerprints as
boilerplate, and compares every pair of one assignment.

It is a review, never a verdict: pairs are listed for a person to read, their matched
regions side by side. Nothing here changes a grade or reaches a student; only
``OUT/report.html`` holds it.

Files are those ``OUT/class.json`` lists, found again under its SUBMISSIONS the way the
grader found them, and read only while their digest is the one graded (else they are
"changed since grading"). Every file is read as the grader reads a student's file, with a
bound on its size and on its own code. Whatever a file holds, it is compared or listed as
not compared, with the reason; the work is bounded per file and the page per assignment.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import itertools
import json
import os
import time
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.errors import KitError
from attnkit.notebook_code import NotebookError, read_cells

from ..classes.discovery import discover, is_notebook
from ..classes.run_manifest import ClassManifest, Member, submission_id
from ..grading.submission import (
    Refused,
    Submission,
    parse_notebook,
    read_submission_file,
    without_outputs,
)

NOISE = 25
"""copydetect's noise threshold: the shortest run of normalised tokens that counts as a
match. A normalised line of these exercises (``V=V.V(V,V=-1)``) is 10 to 25 tokens, so a
match spans at least one line and the next one's start."""
WINDOW = 6
"""Winnowing window: every match of NOISE + WINDOW - 1 = 30 tokens is guaranteed found."""
MAX_FILE_BYTES = 32 * 1024**2
"""The largest file the review reads (outputs included; the grader reads up to 256 MiB)."""
MAX_CODE_CHARS = 50_000
"""The most own code compared per submission: some fifty times a full lesson's answers."""
LISTED = 0.3
"""A pair is listed when its :attr:`Pair.score` is at least this. Honest pairs of the
kit's corpora score up to 0.51 (book-style answers of short functions are alike); copies
and renamed copies 0.97 to 1."""
MIN_MATCHED = 2 * NOISE
"""Nor is a pair listed unless this many tokens match: two short answers to one exercise,
alike in a line or two, are not worth a reader's time (one copied exercise is 60 to 300)."""
MAX_PAIRS = 50
"""Pairs listed per assignment, most similar first."""
SCREEN = 0.03
"""A pair is scored only when the fingerprints the two have in common are, on average, at
least this share of each one's. Most pairs of a class share a few common idioms and no
more; on the kit's corpora no pair below it scores over 0.15, half of LISTED. It keeps a
class of 300 (44,850 pairs an assignment) to seconds."""
SIDE_BY_SIDE = 10
"""Listed pairs shown side by side, with the matched regions marked."""
SHOWN_CHARS = 12_000
"""The most characters of one submission's own code shown in a side-by-side view."""


class NotCompared(Exception):
    """A submission the review leaves out; the message is the reason, for the instructor."""


@dataclass(frozen=True)
class OwnCode:
    """One student's own code for one assignment (see :func:`own_code`)."""

    student: str
    code: str


@dataclass(frozen=True)
class Skipped:
    """A member of the class that was not compared, and why."""

    who: str
    assignment: str | None
    reason: str


@dataclass(frozen=True)
class Pair:
    """Two submissions of one assignment and what they share.

    ``similarity`` is, for each side, the share of its own code's fingerprinted tokens that
    lie in regions found in the other; ``matched`` counts those tokens on side ``a``;
    ``spans`` are the matched regions, as (start, end) character offsets into each side's
    :attr:`OwnCode.code`, sorted and disjoint."""

    a: OwnCode
    b: OwnCode
    similarity: tuple[float, float]
    matched: int
    spans: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]

    @property
    def score(self) -> float:
        """The mean of the two shares: a copy is found both ways (1.0), a copy padded
        with code of its own one way whole (0.75 when doubled), and a short answer that
        common code holds one way only (so a near-empty notebook never tops the list)."""
        return (self.similarity[0] + self.similarity[1]) / 2

    def rank(self) -> tuple[float, int, str, str]:
        """Most similar first: by score, then by the tokens matched."""
        return (-self.score, -self.matched, self.a.student, self.b.student)


@dataclass(frozen=True)
class Review:
    """The review of one assignment."""

    assignment: str
    compared: int
    listed: tuple[Pair, ...]
    """The pairs at or above :data:`LISTED` (and :data:`MIN_MATCHED`), most similar first,
    at most MAX_PAIRS."""
    above: int
    """How many pairs are at or above them (more than are listed when over MAX_PAIRS)."""
    skipped: tuple[Skipped, ...]
    seconds: float


# -- the released notebook and each student's own code ------------------------------------------


def line_key(line: str) -> str:
    """A line as it is looked up in the template: without spaces, or a comment (when no
    quote comes before the ``#``), so a given line respaced or recommented stays given."""
    return "".join(without_comment(line).split())


LONG_STRING = 80
"""A string literal longer than this is compared as a placeholder: copydetect counts any
string as one token, so a long one is only bulk (a 50 KB docstring would push a copy past
the size limit)."""


def compact(source: str) -> str:
    """``source`` without its comments, each string literal over :data:`LONG_STRING`
    characters written ``"..."``, by Python's own tokenizer; ``source`` unchanged when it
    does not tokenize (a cell of IPython syntax)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return source
    starts = list(itertools.accumulate((len(x) for x in source.splitlines(True)), initial=0))

    def at(point: tuple[int, int]) -> int:
        return starts[point[0] - 1] + point[1]

    edits = [
        (at(t.start), at(t.end), "" if t.type == tokenize.COMMENT else '"..."')
        for t in tokens
        if t.type == tokenize.COMMENT or (t.type == tokenize.STRING and len(t.string) > LONG_STRING)
    ]
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source


def without_comment(line: str) -> str:
    """``line`` without its comment, where no quote before the ``#`` could make it part of
    a string (such a line is kept whole)."""
    code, sign, _ = line.partition("#")
    return line if sign and ("'" in code or '"' in code) else code


@dataclass(frozen=True)
class Template:
    """The released notebook's code: its lines (stripped, and as :func:`line_key`s) and its
    whole text."""

    lines: frozenset[str]
    keys: frozenset[str]
    code: str

    def gives(self, line: str) -> bool:
        """Whether ``line`` is the released notebook's (a comment it holds included)."""
        key = line_key(line)
        return line.strip() in self.lines or (key != "" and key in self.keys)


def template_of(cells: list[str]) -> Template:
    cells = [compact(source) for source in cells]  # as each student's own code is read
    lines = [line for source in cells for line in source.splitlines()]
    stripped = frozenset(line.strip() for line in lines) - {""}
    return Template(stripped, frozenset(map(line_key, lines)) - {""}, "\n".join(cells))


def released_template(slug: str) -> Template:
    """The code cells of the notebook released for ``slug`` (what every student started
    from); a KitError when it cannot be found or generated."""
    try:
        from ..authoring.released import released_dir, released_path

        with released_dir(slug) as folder:
            cells = read_cells(released_path(slug, folder))
    except (OSError, KitError) as exc:
        raise KitError(f"the released notebook of {slug} cannot be read ({exc})") from None
    return template_of([cell.source for cell in cells])


UNPRINTABLE = dict.fromkeys([*range(9), 11, 12, *range(14, 32), 127], "\ufffd")


def printable(text: str) -> str:
    """``text`` with lone surrogates (which JSON escapes can make) and control characters
    replaced: what is shown and written to the page is always valid UTF-8 text."""
    return text.encode("utf-8", "replace").decode("utf-8").translate(UNPRINTABLE)


def notebook_code(data: bytes, path: Path) -> bytes:
    """A notebook's bytes without its outputs and attachments: plots, however large,
    never slow the review. Other files and damaged notebooks are refused or kept as they
    are (:func:`read_cells` names their damage)."""
    try:
        notebook, damage = parse_notebook(data, path)
    except Refused as exc:
        raise NotCompared(str(exc)) from None
    if damage is not None:
        raise NotCompared(damage)
    stripped = without_outputs(notebook)
    if stripped is None:
        return data
    try:
        return json.dumps(stripped).encode("utf-8")
    except (ValueError, RecursionError):
        raise NotCompared(f"{path} holds JSON that cannot be written back") from None


def own_code(data: bytes, name: str, template: Template) -> str:
    """The code a student wrote in the file called ``name`` whose bytes are ``data``: its
    code cells, in order, without any line the released notebook's code also holds (the
    stubs, docstrings, given code and checks), each cell that keeps a line headed by a
    comment naming it. Empty when the student wrote nothing of their own.

    Total: returns the code, or raises :class:`NotCompared` with the reason (a file too
    large, not a notebook, not UTF-8, too much own code), whatever ``data`` holds."""
    if len(data) > MAX_FILE_BYTES:
        raise NotCompared(
            f"the file is {len(data) / 1024**2:.2f} MiB, over the "
            f"{MAX_FILE_BYTES // 1024**2} MiB the review reads"
        )
    path = Path(name)
    if is_notebook(path):
        data = notebook_code(data, path)
    try:
        cells = read_cells(path, data)
    except NotebookError as exc:
        raise NotCompared(exc.message) from None
    kept = []
    for cell in cells:
        # Comments are not compared (copydetect drops them), so they do not count towards
        # the limit either: a copy padded with a long comment is still compared.
        lines = [
            code.rstrip()
            for line in compact(cell.source).splitlines()
            if (code := without_comment(line)).strip() and not template.gives(line)
        ]
        if lines:
            kept.append(f"# code cell {cell.index}\n" + "\n".join(lines) + "\n")
    code = printable("".join(kept))
    if len(code) > MAX_CODE_CHARS:
        raise NotCompared(
            f"its own code is {len(code):,} characters, over the {MAX_CODE_CHARS:,} the "
            "review compares"
        )
    return code


# -- which files: the class as graded -----------------------------------------------------------


def found_files(manifest: ClassManifest) -> dict[str, Submission] | str:
    """The submissions under the class's SUBMISSIONS, by member id, found as the grader
    found them; or why they cannot be looked for."""
    root = Path(manifest.submissions)
    if not os.path.lexists(root):
        return f"{root}, the folder graded, no longer exists"
    try:
        return {submission_id(s): s for s in discover(root, manifest.assignment)}
    except Exception as exc:  # an unreadable SUBMISSIONS is every member's reason, not a crash
        return f"{root}, the folder graded, cannot be searched ({exc!r})"[:400]


def member_code(
    member: Member, found: dict[str, Submission], templates: dict[str, Template | str]
) -> tuple[str, OwnCode] | Skipped:
    """(assignment, own code) of one member of the class, or why it is not compared."""
    submission = found.get(member.id)
    if submission is None:
        return Skipped(member.id.removesuffix(".json"), None, "its file is no longer there")
    slug = submission.assignment
    who = submission.student
    if submission.problem is not None or slug is None:
        return Skipped(who, slug, submission.problem or "of no known assignment")
    if submission.sha256 != member.sha256:
        return Skipped(who, slug, "changed since grading")
    if slug not in templates:
        try:
            templates[slug] = released_template(slug)
        except KitError as exc:
            templates[slug] = exc.message
    template = templates[slug]
    if isinstance(template, str):
        return Skipped(who, slug, template)
    try:
        data = read_submission_file(submission.path)
        if hashlib.sha256(data).hexdigest() != member.sha256:
            return Skipped(who, slug, "changed since grading")
        return slug, OwnCode(who, own_code(data, submission.path.name, template))
    except (Refused, NotCompared) as exc:
        return Skipped(who, slug, str(exc))
    except Exception as exc:  # anything at all about one file is that file's reason
        return Skipped(who, slug, f"cannot be read for the review ({exc!r})"[:400])


def class_code(
    manifest: ClassManifest,
) -> tuple[dict[str, list[OwnCode]], list[Skipped], dict[str, Template | str]]:
    """Every member's own code by assignment, the members not compared, and the templates."""
    found = found_files(manifest)
    codes: dict[str, list[OwnCode]] = {}
    skipped: list[Skipped] = []
    templates: dict[str, Template | str] = {}
    for member in manifest.members:
        if isinstance(found, str):
            skipped.append(Skipped(member.id.removesuffix(".json"), None, found))
            continue
        got = member_code(member, found, templates)
        if isinstance(got, Skipped):
            skipped.append(got)
        else:
            codes.setdefault(got[0], []).append(got[1])
    return codes, skipped, templates


# -- comparing ----------------------------------------------------------------------------------


def spans(slices: Any, length: int) -> tuple[tuple[int, int], ...]:
    """copydetect's 2xN slices as sorted, disjoint (start, end) pairs inside the text."""
    merged: list[list[int]] = []
    for start, end in sorted(zip(*(list(map(int, row)) for row in slices), strict=True)):
        start, end = max(0, min(start, length)), max(0, min(end, length))
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((start, end) for start, end in merged)


def screened(a: set[int], b: set[int]) -> bool:
    """Whether two fingerprint sets have enough in common to be scored (see SCREEN)."""
    if not a or not b:
        return False
    common = len(a & b)
    return (common / len(a) + common / len(b)) / 2 >= SCREEN


def kgram_digests(text: str, k: int) -> np.ndarray:
    """A digest of every k-gram of ``text``: the same text gives the same numbers in any
    process."""
    grams = (text[i : i + k].encode("utf-8", "surrogatepass") for i in range(len(text) - k + 1))
    digests = [hashlib.blake2b(gram, digest_size=8).digest() for gram in grams]
    return np.array([int.from_bytes(d, "little", signed=True) for d in digests], dtype=np.int64)


@contextlib.contextmanager
def stable_fingerprints() -> Iterator[None]:
    """copydetect hashes k-grams with Python's ``hash``, which is salted afresh in every
    process: the same class would score a few hundredths differently on each run. Within
    this block its k-grams are hashed by :func:`kgram_digests` instead."""
    from copydetect import utils

    salted = utils.hashed_kgrams
    utils.hashed_kgrams = kgram_digests
    try:
        yield
    finally:
        utils.hashed_kgrams = salted


def scored_pairs(codes: list[OwnCode], template: Template) -> list[Pair]:
    """The pairs of ``codes`` that pass :data:`SCREEN`, scored by copydetect, most similar
    first (see :meth:`Pair.rank`); the template's fingerprints never count."""
    # Imported here: copydetect loads matplotlib, which only this review needs.
    from copydetect import CodeFingerprint, compare_files

    def fingerprint(code: str, boilerplate: list[int]) -> Any:
        stream = io.StringIO(code)
        return CodeFingerprint(
            "own.py", NOISE, WINDOW, boilerplate, filter=True, language="python", fp=stream
        )

    with stable_fingerprints():
        boilerplate = sorted(fingerprint(template.code, []).hashes)
        distinct = {own.code: None for own in codes}  # byte copies are fingerprinted once
        by_code = {code: fingerprint(code, boilerplate) for code in distinct}
    prints = [by_code[own.code] for own in codes]
    pairs = []
    for i, j in itertools.combinations(range(len(codes)), 2):
        if not screened(prints[i].hashes, prints[j].hashes):
            continue
        matched, shares, (slices_a, slices_b) = compare_files(prints[i], prints[j])
        if not matched:
            continue
        a, b = codes[i], codes[j]
        similarity = (min(1.0, float(shares[0])), min(1.0, float(shares[1])))
        regions = (spans(slices_a, len(a.code)), spans(slices_b, len(b.code)))
        pairs.append(Pair(a, b, similarity, int(matched), regions))
    return sorted(pairs, key=Pair.rank)


def review_class(manifest: ClassManifest) -> tuple[list[Review], list[Skipped]]:
    """The review of every assignment of the class, and the members of no assignment that
    were not compared. Never raises for what the files hold."""
    codes, skipped, templates = class_code(manifest)
    importlib.import_module("copydetect")  # loaded (a second) before any clock starts
    slugs = sorted({*codes, *(s.assignment for s in skipped if s.assignment)})
    reviews = []
    for slug in slugs:
        start = time.monotonic()
        members = codes.get(slug, [])
        template = templates.get(slug)
        pairs = scored_pairs(members, template) if isinstance(template, Template) else []
        above = [p for p in pairs if p.score >= LISTED and p.matched >= MIN_MATCHED]
        reviews.append(
            Review(
                slug,
                len(members),
                tuple(above[:MAX_PAIRS]),
                len(above),
                tuple(s for s in skipped if s.assignment == slug),
                time.monotonic() - start,
            )
        )
    return reviews, [s for s in skipped if s.assignment not in slugs]
