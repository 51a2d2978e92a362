"""The platform's layer, and only it, says who handed in, which assignment and when; and every
CSV the kit writes opens safely in a spreadsheet, whoever the students are.

Generated downloads of each platform (Canvas, Moodle, Blackboard, nbgrader, Gradescope) in
which the students choose every inner name, archive member and modification time: the
student, the assignment and the hand-in time are what the platform's part of the layout
says, and changing the times of the files changes nothing."""

from __future__ import annotations

import ast
import csv
import datetime as dt
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.classes import hand_in
from attnkit_autograder.classes.discovery import ALWAYS_SKIPPED, discover, one_students_folder
from attnkit_autograder.classes.results import result_path, write_atomic, write_gradebook
from attnkit_autograder.classes.uploads import safe_part
from attnkit_autograder.grading.records import error_record
from attnkit_autograder.grading.submission import Submission
from attnkit_autograder.platforms import lms_export
from attnkit_autograder.platforms.gradescope import gradescope_student

ROOT = Path(__file__).resolve().parents[1]
SLUG = "02_self_attention"
NOTEBOOK = released_path(SLUG, ROOT / "assignments").read_bytes()
PROPS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
UTC = dt.UTC

# What a student may call a file or folder: anything a file system takes in one name.
chosen = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0"), max_size=24
)
part = chosen.filter(lambda p: p not in ("", ".", ".."))
mtimes = st.integers(0, 2**32)
canvas_names = st.from_regex(r"[a-z]{1,10}", fullmatch=True)
bb_users = st.from_regex(r"[a-z][a-z0-9.-]{0,11}", fullmatch=True)
bb_times = st.from_regex(r"20[0-9]{2}(-[0-9]{2}){5}", fullmatch=True)
moodle_names = st.text(
    st.characters(whitelist_categories=("Lu", "Ll"), whitelist_characters=" _-'0123456789"),
    min_size=1,
    max_size=20,
)
moments = st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2100, 1, 1))


def put(path: Path, data: bytes, mtime: int) -> bool:
    """Write a student's file with the modification time they chose; False when the file
    system refuses the name (a file where a folder of the same name is, say)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (mtime, mtime))
    except OSError:
        return False
    return True


def retime(root: Path, seed: int) -> None:
    """Give every file and folder under ``root`` another modification time."""
    for index, path in enumerate(sorted(root.rglob("*"))):
        moment = (seed * 7919 + index * 104729) % 2**32
        os.utime(path, (moment, moment), follow_symlinks=False)


def seen(root: Path, forced: str | None) -> dict[str, tuple]:
    """What discovery and the hand-in reader say of each student under ``root``."""
    found = discover(root, forced)
    assert len({s.student for s in found}) == len(found)
    return {
        s.student: (s.assignment, s.id_rule, s.lms_number, s.path, s.problem, s.notes,
                    hand_in.hand_in_of(s, root))
        for s in found
    }  # fmt: skip


def unchanged_by_time(root: Path, forced: str | None, before: dict, seed: int) -> None:
    retime(root, seed)
    assert seen(root, forced) == before


# -- Canvas ----------------------------------------------------------------------------------------

canvas_upload = st.tuples(st.booleans(), st.integers(1, 10**9), chosen, mtimes)


@PROPS
@given(
    st.dictionaries(
        canvas_names,
        st.tuples(
            st.integers(1, 10**7),
            st.lists(canvas_upload, min_size=1, max_size=3, unique_by=lambda u: u[1]),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 10**6),
)
def test_canvas_names_the_student_its_number_and_its_late_mark(tmp_path_factory, class_, seed):
    """``<name>[_LATE]_<user>_<sub>_<anything>.ipynb``: the student is Canvas's name, the
    late mark is Canvas's, the latest upload is Canvas's highest number; whatever the
    student called the file (``_LATE_``, another's Canvas name, empty) and whatever its
    modification time."""
    root = tmp_path_factory.mktemp("canvas")
    expected = {}
    for name, (user, uploads) in class_.items():
        for late, sub, own, mtime in uploads:
            file = f"{name}{'_LATE' if late else ''}_{user}_{sub}_{own}.ipynb"
            assert put(root / file, NOTEBOOK, mtime)
        late, sub, own, _ = max(uploads, key=lambda u: u[1])
        latest = root / f"{name}{'_LATE' if late else ''}_{user}_{sub}_{own}.ipynb"
        mark = hand_in.HandIn(source="Canvas LATE mark", late_mark=True)
        expected[name] = (str(user), latest, mark if late else hand_in.HandIn())
    found = seen(root, SLUG)
    assert set(found) == set(expected)
    for name, (assignment, rule, number, path, problem, notes, handed) in found.items():
        assert (assignment, rule, problem) == (SLUG, "canvas", None)
        assert (number, path, handed) == expected[name]
        assert (hand_in.CANVAS_LATE_NOTE in notes) == handed.late_mark
    unchanged_by_time(root, SLUG, found, seed)


def test_a_canvas_upload_of_a_file_named_only_ipynb_keeps_its_student_and_late_mark(
    tmp_path,
) -> None:
    """The upload ``.ipynb`` (a student's own name for the file: nothing before the
    extension) is still Canvas's student, number and LATE mark."""
    (tmp_path / "ann_LATE_12_34_.ipynb").write_bytes(NOTEBOOK)
    [found] = discover(tmp_path, SLUG)
    assert (found.student, found.id_rule, found.lms_number) == ("ann", "canvas", "12")
    assert hand_in.hand_in_of(found, tmp_path).late_mark


# -- Moodle ----------------------------------------------------------------------------------------

inner_file = st.tuples(st.lists(part, min_size=1, max_size=3), st.booleans(), mtimes)


@PROPS
@given(
    st.dictionaries(
        moodle_names.filter(lambda n: not n.startswith(".")),
        st.tuples(st.integers(1, 10**6), st.lists(inner_file, min_size=0, max_size=4)),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 10**6),
)
def test_moodles_folder_names_the_participant_whatever_it_holds(tmp_path_factory, class_, seed):
    """``Full Name_<number>_assignsubmission_file_/<anything>``: every row under the folder
    is the participant Moodle named, with Moodle's number; the inner names (another
    participant's folder name, a Canvas name, an assignment's name, a run's lock file)
    and times name no one, and no time comes from them."""
    root = tmp_path_factory.mktemp("moodle")
    folders = {}
    for name, (number, files) in class_.items():
        folder = root / f"{name}_{number}_assignsubmission_file_"
        folder.mkdir()
        folders[name] = (str(number), folder)
        for parts, notebook, mtime in files:
            *above, last = parts
            put(folder.joinpath(*above, last + (".ipynb" if notebook else "")), NOTEBOOK, mtime)
    found = seen(root, SLUG)
    assert set(found) == set(folders)
    for name, (assignment, rule, number, path, _, _, handed) in found.items():
        assert (assignment, rule, number, handed) == (
            SLUG,
            "moodle",
            folders[name][0],
            hand_in.HandIn(),
        )
        assert path == folders[name][1] or folders[name][1] in path.parents
    unchanged_by_time(root, SLUG, found, seed)


# -- Blackboard ------------------------------------------------------------------------------------


@PROPS
@given(
    st.sampled_from(["Attention", "HW 2", "Lesson-2 (self attention)"]),
    st.dictionaries(
        bb_users,
        st.lists(st.tuples(bb_times, chosen, mtimes), min_size=1, max_size=3,
                 unique_by=lambda a: a[0]),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 10**6),
)  # fmt: skip
def test_blackboards_prefix_names_the_student_and_the_latest_attempt(
    tmp_path_factory, title, class_, seed
):
    """``<Title>_<user>_attempt_<time>_<anything>``: Blackboard's user, and the attempt
    Blackboard timed latest, whatever the file's own name (``x_jdoe_attempt_2099-...``)
    and modification time; a download names no hand-in time of its own."""
    root = tmp_path_factory.mktemp("blackboard")
    expected = {}
    for user, attempts in class_.items():
        for when, own, mtime in attempts:
            assert put(root / f"{title}_{user}_attempt_{when}_{own}.ipynb", NOTEBOOK, mtime)
        when, own, _ = max(attempts)
        expected[user] = root / f"{title}_{user}_attempt_{when}_{own}.ipynb"
    found = seen(root, SLUG)
    assert set(found) == set(expected)
    for user, (assignment, rule, _, path, problem, notes, handed) in found.items():
        assert (assignment, rule, problem, handed) == (SLUG, "blackboard", None, hand_in.HandIn())
        assert path == expected[user]
        if len(class_[user]) > 1:
            assert f"latest of {len(class_[user])} attempts ({max(class_[user])[0]})" in notes[0]
    unchanged_by_time(root, SLUG, found, seed)


# -- nbgrader --------------------------------------------------------------------------------------

lms_looking = st.one_of(
    st.builds("{}_{}_assignsubmission_file_".format, moodle_names, st.integers(1, 99999)),
    st.builds("{}_LATE_{}_{}_{}".format, canvas_names, st.integers(1, 999), st.integers(1, 999),
              chosen),
    st.builds("{}_{}_attempt_{}_{}".format, st.just("HW"), bb_users, bb_times, chosen),
    part,
)  # fmt: skip
decoy = part.filter(lambda n: ".ipynb" not in n.lower() and not n.lower().endswith(".py"))


@PROPS
@given(
    st.dictionaries(
        lms_looking.filter(lambda n: n not in ALWAYS_SKIPPED and n not in (".", "..")),
        st.tuples(
            moments,
            st.lists(part, max_size=2),
            part,
            st.lists(st.tuples(st.lists(decoy, min_size=1, max_size=2), moments), max_size=3),
            mtimes,
        ),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
    st.integers(1, 10**6),
)
def test_nbgraders_folders_name_the_student_the_assignment_and_the_time(
    tmp_path_factory, class_, forced, seed
):
    """``submitted/<student>/<assignment>/<anything>.ipynb`` and ``timestamp.txt``: the
    student is nbgrader's folder, verbatim even when it reads like a Moodle, Canvas or
    Blackboard name; the assignment is nbgrader's folder; the time is nbgrader's
    timestamp.txt, not a timestamp.txt the student put further down, nor any file's
    modification time."""
    course = tmp_path_factory.mktemp("course")
    submitted = course / "submitted"
    expected = {}
    for student, (when, above, own, decoys, mtime) in class_.items():
        folder = submitted / student / SLUG
        notebook = folder.joinpath(*above, own + ".ipynb")
        assert put(notebook, NOTEBOOK, mtime)
        (folder / "timestamp.txt").write_text(f"{when:%Y-%m-%d %H:%M:%S.%f} UTC\n")
        for parts, other in decoys:  # a student's own timestamp.txt, further down
            put(folder.joinpath(*parts, "timestamp.txt"), f"{other} UTC".encode(), mtime)
        at = when.replace(tzinfo=UTC).isoformat()
        expected[student] = (notebook, hand_in.HandIn(at, "nbgrader timestamp.txt"))
    found = seen(course, SLUG if forced else None)
    assert set(found) == set(expected)
    for student, (assignment, rule, number, path, _, _, handed) in found.items():
        assert (assignment, rule, number) == (SLUG, "nbgrader", "")
        assert (path, handed) == expected[student]
    unchanged_by_time(course, SLUG if forced else None, found, seed)


# -- Gradescope ------------------------------------------------------------------------------------

offsets = st.sampled_from([0, 60, -480, 330]).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))


@PROPS
@given(
    st.lists(st.integers(1, 10**8), min_size=1, max_size=3, unique=True),
    moments,
    offsets,
    st.lists(inner_file, max_size=4),
    st.integers(1, 10**6),
)
def test_gradescopes_metadata_names_the_student_and_the_time(
    tmp_path_factory, ids, when, offset, files, seed
):
    """``submission_metadata.json`` beside ``submission/``: the submitters' ids and
    ``created_at`` are Gradescope's; a ``submission_metadata.json`` the student put in
    ``submission/``, and the names and times of their files, change neither."""
    root = tmp_path_factory.mktemp("gradescope")
    created = when.replace(tzinfo=offset)
    users = [{"id": i, "email": f"s{i}@uni.edu"} for i in ids]
    (root / "submission_metadata.json").write_text(
        json.dumps({"created_at": created.isoformat(), "users": users})
    )
    inside = root / "submission"
    inside.mkdir()
    forged = {"created_at": "2000-01-01T00:00:00+00:00", "users": [{"id": 1, "email": "x"}]}
    put(inside / "submission_metadata.json", json.dumps(forged).encode(), 0)
    put(inside / f"{SLUG}.ipynb", NOTEBOOK, 0)
    for parts, notebook, mtime in files:
        *above, last = parts
        put(inside.joinpath(*above, last + (".ipynb" if notebook else "")), NOTEBOOK, mtime)

    def read() -> tuple:
        student = gradescope_student(root)
        graded = one_students_folder(inside, student, SLUG, "gradescope")
        at, _, submitters = hand_in.gradescope_hand_in(root / "submission_metadata.json")
        return student, graded.student, graded.assignment, graded.id_rule, at, submitters

    before = read()
    student = ",".join(sorted(str(i) for i in ids))
    at = hand_in.HandIn(created.astimezone(UTC).isoformat(), "Gradescope submission_metadata.json")
    assert before[:5] == (student, student, SLUG, "gradescope", at)
    assert set(before[5]) == {str(i) for i in ids} | {u["email"] for u in users}
    retime(root, seed)
    assert read() == before


# -- nbgrader's zip_collect: archives the students made --------------------------------------------

member_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=30
)
zip_times = st.tuples(
    st.integers(1980, 2107), st.integers(1, 12), st.integers(1, 28),
    st.integers(0, 23), st.integers(0, 59), st.integers(0, 58),
)  # fmt: skip
upload = st.lists(st.tuples(member_names, st.booleans(), zip_times), min_size=1, max_size=4)


def zipped(members: list[tuple[str, bytes, tuple]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, when in members:
            archive.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return buffer.getvalue()


def student_zip(members: list[tuple[str, bool, tuple]]) -> bytes:
    return zipped([(n, NOTEBOOK if nb else b"x", when) for n, nb, when in members])


@settings(parent=PROPS, max_examples=30)
@given(
    st.dictionaries(
        canvas_names,
        st.tuples(st.booleans(), st.integers(1, 10**6), chosen, upload),
        min_size=1,
        max_size=3,
    ),
    st.dictionaries(bb_users, st.tuples(bb_times, chosen), max_size=2),
    st.dictionaries(
        moodle_names.filter(lambda n: not n.startswith(".") and n.strip(" ") == n),
        st.tuples(chosen, upload),
        max_size=2,
    ),
)
def test_zip_collect_reads_who_and_when_from_the_lms_layer(tmp_path_factory, canvas, bb, moodle):
    """An LMS download (Canvas files and students' zips, Blackboard attempts, Moodle folders
    holding zips) unpacked by the collector's extractor: every student is collected under
    the name the LMS wrote, or refused alone under that name; the archives' member names
    and header times name no one, and the collected hand-in (LATE mark, attempt time)
    is the LMS's."""
    from attnkit_autograder.platforms.course import REFUSED, LayerExtractor

    assume(not set(canvas) & set(bb) and not set(moodle) & (set(canvas) | set(bb)))
    course = tmp_path_factory.mktemp("zipcollect")
    entries, expected, whose = [], {}, {}
    when_zipped = (2020, 1, 1, 0, 0, 0)
    for name, (late, user, own, members) in canvas.items():
        entry = f"{name}{'_LATE' if late else ''}_{user}_{user}_{own}.zip"
        entries.append((entry, student_zip(members), when_zipped))
        expected[name] = hand_in.HandIn(
            source="canvas download (nbgrader zip_collect)", late_mark=late
        )
        whose[name] = entry
    for user, (when, own) in bb.items():
        entry = f"HW2_{user}_attempt_{when}_{own}.ipynb"
        entries.append((entry, NOTEBOOK, when_zipped))
        stamp = f"{when[:10]} {when[11:].replace('-', ':')}"
        try:
            at = hand_in.stored(stamp)
            record = hand_in.HandIn(at=at, source="blackboard download (nbgrader zip_collect)")
        except ValueError:
            record = None  # not a time: the collector names it, checked below
        expected[user], whose[user] = record, entry
    for name, (own, members) in moodle.items():
        entry = f"{name}_{len(whose) + 1}_assignsubmission_file_"
        entries.append((f"{entry}/{own or 'work'}.zip", student_zip(members), when_zipped))
        expected[name] = hand_in.HandIn(source="moodle download (nbgrader zip_collect)")
        whose[name] = entry
    download = course / "archive"
    download.mkdir()
    (download / "class.zip").write_bytes(zipped(entries))
    extracted = course / "extracted"
    extracted.mkdir()
    LayerExtractor().extract(str(download), str(extracted))
    refused = json.loads((extracted / REFUSED).read_text())
    # One student's names cost only that student: never the whole class's download.
    assert "class.zip" not in refused, refused
    found = [s for s in discover(extracted, SLUG) if s.path != extracted / REFUSED]
    names = {s.student for s in found}
    assert names <= set(expected), (names, expected)
    for student in set(expected) - names:
        written = safe_part(whose[student].split("/")[0])  # the name the kit unpacks it to
        assert any(key.startswith(written) for key in refused), student
    collected = [s for s in found if s.problem is None]
    submitted = course / "submitted"
    for submission in collected:
        target = submitted / submission.student / SLUG / f"{SLUG}.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copyfile(submission.path, target)
    hand_in.record_collection(submitted, SLUG, extracted, collected, {})
    for submission in discover(course, SLUG):
        record = hand_in.hand_in_of(submission, course)
        if expected[submission.student] is None:
            assert record.problem and not record.at
        else:
            assert record == expected[submission.student]


# -- every CSV the kit writes ---------------------------------------------------------------------

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
names = st.tuples(
    st.sampled_from(["", "=", "+", "-", "@", "\t", "\r", "\t=", " ", '"', ",", "'", "\n"]),
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")
        | st.sampled_from(list("=+-@\t\r\n,\"'")),
        min_size=1,
        max_size=14,
    ),
).map("".join)


def roster_keys(name: str, index: int) -> set[str]:
    ident = name.strip()
    return {ident.lower(), f"{ident}@uni.edu".lower(), f"{index}000017"}


def write_results(out: Path, students: list[str], graded: list[bool]) -> list[Path]:
    paths = []
    for index, (name, ok) in enumerate(zip(students, graded, strict=True)):
        submission = Submission(name.strip(), SLUG, out / f"{index}.py", None, f"{index:064d}")
        record = error_record(submission, name)
        if ok:
            record = {**record, "status": "graded", "error": None, "score": 7.5}
        path = result_path(out, submission)
        write_atomic(path, json.dumps(record))
        paths.append(path)
    return paths


@PROPS
@given(
    st.lists(names, min_size=1, max_size=4, unique_by=lambda n: n.strip().lower()),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from(["blank", "zero"]),
)
def test_every_csv_the_kit_writes_opens_as_text(tmp_path_factory, students, graded, missing):
    """Students named ``=cmd|...``, ``+1``, ``@SUM``, a tab, a CR, commas, quotes, line
    breaks: grades.csv (with and without the late columns) and every export format (with
    its late and manual side files) hold no cell that starts like a formula, and the names
    are all there, quote-prefixed where they had to be."""
    assume(all(n.strip() and n.strip().lower() != "points possible" for n in students))
    keys = [roster_keys(n, i) for i, n in enumerate(students)]
    assume(sum(map(len, keys)) == len(set().union(*keys)))
    graded = graded[: len(students)]
    base = tmp_path_factory.mktemp("csv")
    plain = base / "plain"
    write_gradebook(plain, write_results(plain, students, graded))
    out = base / "late"
    paths = write_results(out, students, graded)
    by_id = {n.strip(): n for n in students}

    def adjust(path: Path, record: dict) -> dict:
        if record["status"] != "graded":
            return record  # as the late policy leaves it
        name = by_id[record["student"]]
        late = {"status": "late", "submitted": None, "source": name, "days_late": 1,
                "penalty_percent": 10.0, "reason": name}  # fmt: skip
        return {**record, "raw_score": record["score"], "late": late}

    write_gradebook(out, paths, adjust)
    roster = base / "roster.csv"
    with roster.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Email"])
        for index, name in enumerate(students):
            ident = name.strip()
            writer.writerow([name, f"{index}000017", name, ident, name, f"{ident}@uni.edu"])

    def with_manual(out: Path, grades: dict) -> dict:
        rows = [
            {**r, "manual": {"points": 1.0, "comments": [by_id[r["student"]]] * 2}}
            if r["status"] == "graded"
            else r
            for r in grades["submissions"]
        ]
        return {**grades, "submissions": rows}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lms_export, "with_manual_grades", with_manual)
        for kind in lms_export.FORMATS:
            lms_export.export(out, kind, roster, missing)
    written = sorted([plain / "grades.csv", *out.glob("*.csv")])
    late_files = {f"export-{k}-late.csv" for k in lms_export.FORMATS} if any(graded) else set()
    manual = {f"export-{k}-manual.csv" for k in lms_export.FORMATS} if any(graded) else set()
    exports = {f"export-{k}.csv" for k in lms_export.FORMATS}
    assert {p.name for p in out.glob("*.csv")} == {"grades.csv"} | exports | late_files | manual
    tables = {}
    for path in written:
        table = list(csv.reader(path.open(newline="", encoding="utf-8")))
        for row in table:
            for cell in row:
                assert not cell.startswith(FORMULA_START), (path.name, cell)
        tables[path] = table

    def shown(text: str) -> str:
        return "'" + text if text.startswith(FORMULA_START) else text

    for path in (plain / "grades.csv", out / "grades.csv"):
        rows = tables[path][1:]
        assert sorted(r[0] for r in rows) == sorted(shown(n.strip()) for n in students)
        errors = sorted(r[5] for r in rows if r[2] == "error")
        assert errors == sorted(shown(n) for n, ok in zip(students, graded, strict=True) if not ok)
    assert sorted(r[-1] for r in tables[out / "grades.csv"][1:] if r[2] == "graded") == sorted(
        shown(n) for n, ok in zip(students, graded, strict=True) if ok
    )
    canvas = tables[out / "export-canvas.csv"][2:]
    assert [r[0] for r in canvas] == [shown(n.strip()) for n in students]
    assert [r[4] for r in canvas] == [shown(n.strip()) for n in students]


# -- the one writer of CSV -------------------------------------------------------------------------

WRITERS = {"writer", "DictWriter"}


def csv_writer_calls(source: str) -> list[int]:
    """The lines of ``source`` that make a csv module writer, however csv was imported."""
    tree = ast.parse(source)
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "csv"}
        elif isinstance(node, ast.ImportFrom) and node.module == "csv":
            functions |= {a.asname or a.name for a in node.names if a.name in WRITERS}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        by_module = (
            isinstance(func, ast.Attribute)
            and func.attr in WRITERS
            and isinstance(func.value, ast.Name)
            and func.value.id in modules
        )
        if by_module or (isinstance(func, ast.Name) and func.id in functions):
            lines.append(node.lineno)
    return sorted(lines)


def writers_under(*folders: Path) -> dict[str, list[int]]:
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            lines = csv_writer_calls(path.read_text(encoding="utf-8"))
            if lines:
                found[path.relative_to(folder.parent).as_posix()] = lines
    return found


def test_spreadsheet_is_the_one_module_that_writes_csv() -> None:
    found = writers_under(ROOT / "autograder", ROOT / "attnkit")
    assert list(found) == ["autograder/classes/spreadsheet.py"], found


def test_the_scan_finds_a_planted_csv_writer(tmp_path) -> None:
    package = tmp_path / "autograder"
    shutil.copytree(ROOT / "autograder", package, ignore=shutil.ignore_patterns("__pycache__"))
    planted = {
        "platforms/planted_a.py": "import csv\n\ndef f(h):\n    csv.writer(h).writerow(['=1'])\n",
        "platforms/planted_b.py": "import csv as c\nw = c.DictWriter(open('x'), ['a'])\n",
        "classes/planted_c.py": "from csv import writer as w\n\nw(None)\n",
    }
    for name, text in planted.items():
        (package / name).write_text(text)
    found = writers_under(package)
    assert found == {
        "autograder/classes/planted_c.py": [3],
        "autograder/classes/spreadsheet.py": found["autograder/classes/spreadsheet.py"],
        "autograder/platforms/planted_a.py": [4],
        "autograder/platforms/planted_b.py": [2],
    }
    assert csv_writer_calls("import csv\ncsv.reader(x)\nwriter(x)\n") == []


def test_an_entry_named_to_climb_out_costs_only_its_student(tmp_path) -> None:
    """A class download with one entry whose name, read with either separator, climbs out
    (``mal_12_22_\\..\\x.ipynb``): that entry is refused by its name, and every other student
    is collected."""
    from attnkit_autograder.platforms.course import REFUSED, LayerExtractor

    download, extracted = tmp_path / "archive", tmp_path / "extracted"
    download.mkdir()
    extracted.mkdir()
    when = (2020, 1, 1, 0, 0, 0)
    entries = [
        (f"ann_11_21_{SLUG}.ipynb", NOTEBOOK, when),
        ("mal_12_22_\\..\\x.ipynb", NOTEBOOK, when),
    ]
    (download / "class.zip").write_bytes(zipped(entries))
    LayerExtractor().extract(str(download), str(extracted))
    refused = json.loads((extracted / REFUSED).read_text())
    assert "class.zip" not in refused and any(key.startswith("mal_12_22_") for key in refused)
    found = [s for s in discover(extracted, SLUG) if s.path != extracted / REFUSED]
    assert [s.student for s in found if s.problem is None] == ["ann"]
