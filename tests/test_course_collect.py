"""The nbgrader course's zip_collect is a platform adapter: who a download belongs to, which
of a student's files is the submission and when it was handed in come from the layer the
LMS wrote, read by the same code as ``attnkit grade`` (``classes.hand_in``,
``classes.discovery``), never from the names, headers or times inside a student's upload.
One student's bad upload costs only that student."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook
from attnkit_autograder.authoring.released import run_nbgrader, write_course_skeleton
from attnkit_autograder.classes import hand_in
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.uploads import unpack

ROOT = Path(__file__).resolve().parents[1]
SLUG = "02_self_attention"


@pytest.mark.parametrize(
    ("name", "student"),
    [
        (f"li_wei_{SLUG}.ipynb", "li_wei"),
        (f"j.doe-2_{SLUG}.ipynb", "j.doe-2"),
        (f"zoë_{SLUG}.ipynb", "zoë"),
        (f"smithjane_12345_67890_{SLUG}.ipynb", "smithjane"),  # Canvas
        ("smithjane_LATE_12345_67890_my work.ipynb", "smithjane"),  # Canvas, late
        ("HW2_jdoe_attempt_2024-03-02-09-30-00_nb.ipynb", "jdoe"),  # Blackboard
    ],
)
def test_real_lms_download_names_keep_the_whole_id(name: str, student: str) -> None:
    assert hand_in.identify_file(name, SLUG).student == student


def test_a_folder_the_lms_named_is_read_like_a_file_it_named() -> None:
    assert hand_in.identify_folder("Ada Lovelace_4242_assignsubmission_file_").lms_number == "4242"
    unpacked = hand_in.identify_folder("smithjane_LATE_12345_67890_upload")
    assert (unpacked.student, unpacked.rule, unpacked.notes) == (
        "smithjane",
        "canvas",
        (hand_in.CANVAS_LATE_NOTE,),
    )
    assert hand_in.identify_folder("ann").rule == "student folder"


# -- uploads: any archive a student made unpacks safely, or is refused by name -----------------


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# zipfile itself cuts a name at a NUL byte: none reaches the kit.
member_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=40
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(member_names, st.binary(max_size=64), min_size=1, max_size=6))
def test_any_zip_a_student_makes_writes_only_inside_its_folder(tmp_path, members) -> None:
    case = tmp_path / os.urandom(6).hex()
    case.mkdir()
    upload = case / "upload.zip"
    upload.write_bytes(zipped(members))
    folder = case / "out"
    problem = unpack(upload, folder)
    written = [p for p in case.rglob("*") if p.is_file() and p != upload]
    assert all(folder in p.parents for p in written)
    assert all(not p.is_symlink() for p in case.rglob("*"))
    if problem is not None:
        assert written == [] and problem.startswith("upload.zip: ")


def folder_headers(count: int) -> bytes:
    """A small tar.xz of nothing but ``count`` folder entries."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as archive:
        for index in range(count):
            info = tarfile.TarInfo(f"d{index}")
            info.type = tarfile.DIRTYPE
            archive.addfile(info)
    return data.getvalue()


def test_a_tar_header_that_declares_a_huge_name_is_refused_before_it_is_read(tmp_path) -> None:
    """tarfile reads a long-name header whole: one declaring a megabyte (a few hundred
    bytes compressed) is refused at its size, before it is read."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("n" * (1 << 20))
        archive.addfile(info, io.BytesIO(b""))
    (tmp_path / "long.tar.xz").write_bytes(data.getvalue())
    problem = unpack(tmp_path / "long.tar.xz", tmp_path / "out")
    assert problem is not None and "header is larger" in problem
    assert not (tmp_path / "out").exists()


def test_an_upload_that_takes_too_long_to_unpack_is_refused(tmp_path) -> None:
    from attnkit_autograder.classes.uploads import Budget

    (tmp_path / "slow.zip").write_bytes(zipped({"a.ipynb": b"{}"}))
    problem = unpack(tmp_path / "slow.zip", tmp_path / "out", Budget(seconds=-1.0))
    assert problem is not None and "longer to unpack" in problem
    assert not (tmp_path / "out").exists()


def test_links_climbs_bombs_and_damage_are_refused(tmp_path) -> None:
    link = io.BytesIO()
    with tarfile.open(fileobj=link, mode="w") as archive:
        info = tarfile.TarInfo("evil.ipynb")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/shadow"
        archive.addfile(info)
    cases = {
        "climb.zip": zipped({"../../evil.ipynb": b"{}"}),
        "absolute.zip": zipped({"/tmp/evil.ipynb": b"{}"}),
        "link.tar": link.getvalue(),
        "bomb.zip": zipped({f"f{i}.ipynb": b"" for i in range(2001)}),
        "folders.zip": zipped({f"d{i}/": b"" for i in range(2001)}),
        "folders.tar.xz": folder_headers(2001),
        "damaged.zip": b"PK\x03\x04 not really",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert unpack(tmp_path / name, tmp_path / f"{name}-out") is not None, name
        assert not (tmp_path / f"{name}-out").exists()
    assert not (tmp_path.parent / "evil.ipynb").exists()


# -- the whole collection, on real-shaped downloads ------------------------------------------


def notebook_bytes(marker: str) -> bytes:
    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    notebook = {**notebook, "metadata": {**notebook["metadata"], "who": marker}}
    return json.dumps(notebook).encode()


@pytest.mark.slow
def test_a_canvas_download_collects_whom_the_lms_named(tmp_path: Path) -> None:
    """Canvas's bulk download, with nested uploads made by the students. Bob's upload holds a
    file named like Alice's Canvas file (and an old header time): it is Bob's. Two students
    called Li Wei stay two. Eve's upload is damaged and Mal's climbs out of its folder: each
    is refused alone, with the reason, and everyone else is collected. The LATE mark the
    LMS wrote reaches the grader; no time comes from a file."""
    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    archive = course / "downloaded" / SLUG / "archive"
    archive.mkdir(parents=True)
    forged = zipfile.ZipInfo(f"alice_125_458_{SLUG}.ipynb", date_time=(1999, 1, 1, 0, 0, 0))
    bob = io.BytesIO()
    with zipfile.ZipFile(bob, "w") as upload:
        upload.writestr(forged, notebook_bytes("bob"))
    download = {
        f"alice_125_458_{SLUG}.ipynb": notebook_bytes("alice"),
        f"weili_4242_1001_{SLUG}.ipynb": notebook_bytes("wei li 4242"),
        f"weili_4343_1002_{SLUG}.ipynb": notebook_bytes("wei li 4343"),
        f"zoë_LATE_130_1003_{SLUG}.ipynb": notebook_bytes("zoë"),
        "bob_124_457_work.zip": bob.getvalue(),
        "eve_126_459_work.zip": b"PK\x03\x04 damaged",
        "mal_127_460_work.zip": zipped({f"../../../submitted/alice/{SLUG}/{SLUG}.ipynb": b"{}"}),
    }
    (archive / "submissions.zip").write_bytes(zipped(download))
    done = run_nbgrader(course, "zip_collect", SLUG)
    log = done.stdout + done.stderr
    submitted = course / "submitted"
    found = {s.student: s for s in discover(submitted)}
    assert set(found) == {"alice", "bob", "weili_4242", "weili_4343", "zoë"}, log
    for student, marker in (("alice", "alice"), ("bob", "bob"), ("weili_4343", "wei li 4343")):
        metadata = json.loads(found[student].path.read_text())["metadata"]
        assert metadata["who"] == marker
    assert "eve_126_459_work.zip" in log and "mal_127_460_work.zip" in log
    assert not (course / "submitted" / "alice" / SLUG / "timestamp.txt").exists()
    late = hand_in.hand_in_of(found["zoë"], submitted)
    assert late.late_mark and late.source.startswith("canvas download")
    assert hand_in.hand_in_of(found["alice"], submitted) == hand_in.HandIn(
        source="canvas download (nbgrader zip_collect)"
    )


@pytest.mark.slow
def test_a_moodle_download_with_a_nested_upload(tmp_path: Path) -> None:
    """Moodle's folder per participant: the folder names who, a zip inside it is unpacked
    (its inner folders, named like other participants, name no one)."""
    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    archive = course / "downloaded" / SLUG / "archive"
    archive.mkdir(parents=True)
    inner = zipped({f"Ann Lee_9999_assignsubmission_file_/{SLUG}.ipynb": notebook_bytes("ben")})
    download = {
        f"Ann Lee_1111_assignsubmission_file_/{SLUG}.ipynb": notebook_bytes("ann"),
        "Ben Ode_2222_assignsubmission_file_/work.zip": inner,
    }
    (archive / "moodle.zip").write_bytes(zipped(download))
    run_nbgrader(course, "zip_collect", SLUG)
    found = {s.student: s for s in discover(course / "submitted")}
    assert set(found) == {"Ann Lee", "Ben Ode"}
    metadata = json.loads(found["Ben Ode"].path.read_text())["metadata"]
    assert metadata["who"] == "ben"


@pytest.mark.parametrize(
    ("student", "safe"),
    [("Eve,=1+2", False), ('Mal"x', False), ("a\nb", False), ("=cmd", False), ("x,@SUM(1)", False),
     ("Eve;=1+2", False), ("Mia\t@SUM(1)", False),
     ("Ann Lee", True), ("o'neil-2", True), ("José Ñ", True)],
)  # fmt: skip
def test_ids_that_nbgraders_unquoted_export_would_split_or_run_are_unsafe(student, safe) -> None:
    from attnkit_autograder.classes.spreadsheet import unsafe_unquoted_cell

    assert (unsafe_unquoted_cell(student) is None) == safe


@pytest.mark.slow
def test_a_participant_named_like_a_formula_is_not_collected(tmp_path: Path) -> None:
    """nbgrader's CSV export joins its fields with bare commas: a Moodle participant named
    ``Eve,=1+2`` would write a formula into it, so the collector leaves that upload out and
    says why, and collects every other student."""
    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    archive = course / "downloaded" / SLUG / "archive"
    archive.mkdir(parents=True)
    download = {
        f"Ann Lee_1111_assignsubmission_file_/{SLUG}.ipynb": notebook_bytes("ann"),
        f"Eve,=1+2_2222_assignsubmission_file_/{SLUG}.ipynb": notebook_bytes("eve"),
    }
    (archive / "moodle.zip").write_bytes(zipped(download))
    done = run_nbgrader(course, "zip_collect", SLUG)
    found = {s.student for s in discover(course / "submitted")}
    assert found == {"Ann Lee"}
    assert "split a CSV row" in done.stdout + done.stderr
