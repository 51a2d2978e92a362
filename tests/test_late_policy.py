"""The late policy: submission times only from where the platform writes them, a policy file
whose mistakes are named by file and line, and penalties that match a table computed by
hand; both scores reach grades.json, the CSV, the exports, nbgrader and Gradescope."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.errors import KitError
from attnkit_autograder.classes import hand_in, late, results, run_manifest
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.platforms import lms_export
from attnkit_autograder.platforms.gradescope import apply_late_policy, to_results

SLUG = "02_self_attention"

POLICY = """\
# a course's late policy
[late]
penalty_per_day = 10
max_penalty = 30
grace_minutes = 10
timezone = "Europe/Paris"

[late.deadlines]
02_self_attention = 2026-11-20T23:59:00+00:00

[late.extensions]
jdoe = 2
li_wei = { 2 = "2026-11-25 12:00" }
"""


@pytest.fixture
def policy(tmp_path: Path) -> late.LatePolicy:
    path = tmp_path / "course.toml"
    path.write_text(POLICY)
    return late.read_policy(path)


def graded(student: str, score: float) -> dict:
    return {
        "student": student, "assignment": SLUG, "status": "graded", "score": score,
        "max_score": 14.0, "error": None, "source": f"/c/{student}.ipynb", "tests": [],
    }  # fmt: skip


# (student, handed in (UTC), raw score) -> (status, days late, penalty %, final score),
# worked out by hand from POLICY: 10% of the 14 points possible per started day, at most 30%,
# 10 minutes' grace; jdoe has 2 more days, li_wei until 25 Nov 12:00 Paris time (11:00 UTC).
TABLE = [
    ("ada", "2026-11-20T23:59:00+00:00", 14.0, "on time", 0, 0.0, 14.0),
    ("ada", "2026-11-21T00:09:00+00:00", 14.0, "on time", 0, 0.0, 14.0),  # in the grace
    ("ada", "2026-11-21T00:10:00+00:00", 14.0, "late", 1, 10.0, 12.6),  # 11 min: day 1
    ("ada", "2026-11-21T23:59:00+00:00", 7.0, "late", 1, 10.0, 5.6),  # exactly one day
    ("ada", "2026-11-22T00:00:00+00:00", 7.0, "late", 2, 20.0, 4.2),  # into day 2
    ("ada", "2026-11-30T00:00:00+00:00", 14.0, "late", 10, 30.0, 9.8),  # capped at 30%
    ("ada", "2026-11-30T00:00:00+00:00", 3.0, "late", 10, 30.0, 0.0),  # never below 0
    ("jdoe", "2026-11-22T23:00:00+00:00", 14.0, "on time", 0, 0.0, 14.0),  # 2 more days
    ("jdoe", "2026-11-23T01:00:00+00:00", 14.0, "late", 1, 10.0, 12.6),
    ("li_wei", "2026-11-25T10:59:00+00:00", 14.0, "on time", 0, 0.0, 14.0),
    ("li_wei", "2026-11-25T11:11:00+00:00", 14.0, "late", 1, 10.0, 12.6),
    ("ada", "2026-11-21T01:00:00+01:00", 14.0, "on time", 0, 0.0, 14.0),  # an offset
]


@pytest.mark.parametrize(("student", "at", "raw", "status", "days", "percent", "final"), TABLE)
def test_penalties_match_the_table_worked_out_by_hand(
    policy, student, at, raw, status, days, percent, final
) -> None:
    decided = late.decide(
        policy, hand_in.HandIn(at, "nbgrader timestamp.txt"), graded(student, raw)
    )
    assert decided["raw_score"] == raw
    assert decided["late"]["status"] == status
    assert decided["late"]["days_late"] == days
    assert decided["late"]["penalty_percent"] == percent
    assert decided["score"] == pytest.approx(final, abs=1e-9)
    if percent:
        assert f"-{percent:g}% of the points possible" in decided["late"]["reason"]


def test_a_penalty_of_the_score_and_the_cases_with_no_time(policy) -> None:
    of_score = late.LatePolicy(**{**policy.to_dict(), "of": "score"})
    decided = late.decide(
        of_score, hand_in.HandIn("2026-11-22T00:00:00+00:00", "x"), graded("a", 7)
    )
    assert decided["score"] == pytest.approx(5.6)  # 20% of 7, not of 14
    canvas = hand_in.HandIn(source="Canvas LATE mark", late_mark=True)
    assert late.decide(policy, canvas, graded("ada", 14))["score"] == pytest.approx(12.6)
    # jdoe has an extension, and Canvas recorded no time: no penalty, and the reason says so.
    decided = late.decide(policy, canvas, graded("jdoe", 14))
    assert (decided["score"], decided["late"]["status"]) == (14, "no time recorded")
    assert "check it by hand" in decided["late"]["reason"]
    nothing = late.decide(policy, hand_in.HandIn(), graded("ada", 14))
    assert (nothing["score"], nothing["late"]["status"]) == (14, "no time recorded")
    other = {**graded("ada", 14), "assignment": "03_causal_attention"}
    assert (
        late.decide(policy, hand_in.HandIn("2030-01-01T00:00:00+00:00", "x"), other)["late"][
            "status"
        ]
        == "no deadline"
    )
    error = {**graded("ada", 0), "status": "error"}
    assert late.decide(policy, hand_in.HandIn("2030-01-01T00:00:00+00:00", "x"), error) == error


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[late]\npenalty_per_day = 10\n\n[late.deadlines]\n02_self_attention = 'soon'\n", 5,
         "'soon' is not a date and time"),
        ("[late]\npenalty_per_day = 10\nmax_penalty = 250\n", 3, "max_penalty must lie between"),
        ("[late]\npenalty_per_day = 10\npenalty_per_week = 1\n", 3, "not a policy setting"),
        ("[late]\npenalty_per_day = 10\ntimezone = 'Mars/Olympus'\n", 3, "is no time zone"),
        ("[late]\npenalty_per_day = 10\n[late.deadlines]\n09_nothing = 2026-01-01T00:00:00Z\n",
         4, "is no assignment"),
        ("[late]\npenalty_per_day = 10\n[late.extensions]\njdoe = -3\n", 4, "between 0 and 365"),
        ("[late]\npenalty_per_day = 1" + "0" * 300 + "\n", 2, "must lie between 0 and 100"),
        ("[late]\npenalty_per_day = 10\n[late.extensions]\njdoe = 1" + "0" * 300 + "\n", 4,
         "between 0 and 365"),
        ("[late]\npenalty_per_day = 10\n[late.deadlines]\n2 = 0001-01-01T00:00:00Z\n", 4,
         "the year 1 is not between"),
        ("[late]\npenalty_per_day = 10\n[late.deadlines]\n2 = 2026-01-01T00:00:00Z\n"
         "02_self_attention = 2026-01-02T00:00:00Z\n", 5, "02_self_attention is named twice"),
        ("[late]\npenalty_per_day = 10\n# 02_self_attention is due soon\n[late.deadlines]\n"
         "03_causal_attention = 2026-01-01T00:00:00Z\n\n\n02_self_attention = 'soon'\n", 8,
         "'soon' is not a date"),
        ("[late]\nmax_penalty = 10\n", 1, "penalty_per_day is missing"),
        ("[late]\npenalty_per_day = 10\nof = [\n", 3, "(not TOML)"),
        ("[late]\npenalty_per_day = 10\nof = 'x\ngrace_minutes = 1\n", 4, "(not TOML)"),
    ],
)  # fmt: skip
def test_a_bad_policy_is_named_by_file_and_line(tmp_path, text, line, words) -> None:
    path = tmp_path / "course.toml"
    path.write_text(text)
    with pytest.raises(KitError) as caught:
        late.read_policy(path)
    assert str(path) in caught.value.message
    assert words in caught.value.message
    assert f"{path} line {line}: " in caught.value.message


@pytest.mark.parametrize(
    ("content", "at"),
    [
        ("2026-11-20 23:59:59.123456 UTC\n", "2026-11-20T23:59:59.123456+00:00"),  # nbgrader
        ("2026-11-21T00:59:59+01:00", "2026-11-20T23:59:59+00:00"),
        ("\n\n2026-11-20 23:59\n", "2026-11-20T23:59:00"),  # no offset: the policy's zone
        ("2026-11-20 15:59:59.000000 PST", "2026-11-20T15:59:59 PST"),  # nbgrader's zone name
        ("1971-01-01T00:00:00+14:00", "1970-12-31T10:00:00+00:00"),  # an edge, read whole
    ],
)
def test_nbgraders_timestamp_is_read(tmp_path, content, at) -> None:
    path = tmp_path / "timestamp.txt"
    path.write_text(content)
    assert hand_in.read_timestamp(path) == hand_in.HandIn(at, "nbgrader timestamp.txt")


@pytest.mark.parametrize(
    ("content", "line"),
    [("yesterday\n", 1), ("\n\n2026-13-40 99:99:99 UTC\n", 3),
     ("2026-11-20 23:59:59 UTC\n2026-11-19 10:00:00 UTC\n", 2), ("", 1),
     ("9999-12-31T23:59:00-12:00\n", 1), ("0001-01-01T00:00:00+14:00", 1),
     ("1969-12-31 23:59:59 UTC", 1), ("2026-11-22 12:00:00+09:00 UTC", 1)],
)  # fmt: skip
def test_a_malformed_timestamp_names_its_file_and_line(tmp_path, content, line) -> None:
    path = tmp_path / "timestamp.txt"
    path.write_text(content)
    handed = hand_in.read_timestamp(path)
    assert handed.at == ""
    assert handed.problem.startswith(f"{path} line {line}: ")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_in_a_timestamp_give_a_time_or_a_named_problem(tmp_path_factory, data) -> None:
    path = tmp_path_factory.mktemp("ts") / "timestamp.txt"
    path.write_bytes(data)
    handed = hand_in.read_timestamp(path)
    assert bool(handed.at) != bool(handed.problem)
    assert handed.problem == "" or handed.problem.isprintable()


LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                   st.text(max_size=30), st.datetimes())  # fmt: skip
TABLES = st.recursive(LEAVES, lambda inner: st.dictionaries(
    st.sampled_from(["penalty_per_day", "max_penalty", "of", "grace_minutes", "timezone",
                     "late_mark_days", "deadlines", "extensions", "2", SLUG, "jdoe", "x"]),
    inner, max_size=6), max_leaves=20)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(TABLES)
def test_any_policy_table_gives_a_policy_or_one_policy_error(table) -> None:
    try:
        policy = late.policy_from_dict(table)
    except late.PolicyError as exc:
        assert exc.why
        return
    # A policy that was accepted survives class.json and judges any hand-in.
    assert late.policy_from_dict(json.loads(json.dumps(policy.to_dict()))) == policy
    late.decide(policy, hand_in.HandIn("2026-11-21T00:00:00+00:00", "x"), graded("jdoe", 14))


def test_time_comes_only_from_where_the_platform_writes_it(tmp_path) -> None:
    notebook = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    course = tmp_path / "course"
    mine = course / "submitted" / "ada" / SLUG
    mine.mkdir(parents=True)
    (mine / f"{SLUG}.ipynb").write_text(notebook)
    (mine / "timestamp.txt").write_text("2026-11-21 00:30:00.000000 UTC\n")
    deep = course / "submitted" / "ben" / SLUG / "work"
    deep.mkdir(parents=True)
    (deep / f"{SLUG}.ipynb").write_text(notebook)
    (deep / "timestamp.txt").write_text("2020-01-01 00:00:00 UTC\n")  # not nbgrader's place
    (course / "submitted" / "ben" / SLUG / "timestamp.txt").write_text("2026-11-22 10:00 UTC")
    none = course / "submitted" / "cy" / SLUG / "work"
    none.mkdir(parents=True)
    (none / f"{SLUG}.ipynb").write_text(notebook)  # moved down, and no timestamp.txt at all
    found = {s.student: hand_in.hand_in_of(s, course) for s in discover(course)}
    assert found["ada"] == hand_in.HandIn("2026-11-21T00:30:00+00:00", "nbgrader timestamp.txt")
    # A notebook in a folder below: the assignment folder's own timestamp.txt still counts.
    assert found["ben"] == hand_in.HandIn("2026-11-22T10:00:00+00:00", "nbgrader timestamp.txt")
    # nbgrader always writes one: none at all is named, never read as "no time, no penalty".
    assert found["cy"].problem.endswith("there is none") and not found["cy"].at
    # A folder per student (an LMS download): a timestamp.txt there is the student's file.
    downloads = tmp_path / "downloads"
    (downloads / "cy").mkdir(parents=True)
    (downloads / "cy" / f"{SLUG}.ipynb").write_text(notebook)
    (downloads / "cy" / "timestamp.txt").write_text("2020-01-01 00:00:00 UTC\n")
    (downloads / f"dee_LATE_123_456_{SLUG}.ipynb").write_text(notebook)
    (downloads / f"eve_late_124_457_{SLUG}.ipynb").write_text(notebook)
    (downloads / f"fay_125_458_x_LATE_1_2_{SLUG}.ipynb").write_text(notebook)
    found = {s.student: hand_in.hand_in_of(s, downloads) for s in discover(downloads)}
    assert found["cy"] == hand_in.HandIn()
    assert found["dee"].late_mark and found["eve"].late_mark
    assert found["fay"] == hand_in.HandIn()  # LATE in the student's own part of the name


def write_result(out: Path, manifest_members: list, record: dict, member) -> None:
    path = out / member.result
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    manifest_members.append(member)


def test_the_gradebook_and_the_exports_keep_both_scores(tmp_path, policy) -> None:
    out, members = tmp_path / "out", []
    for student, at, raw in (("ada", "2026-11-22T00:00:00+00:00", 14.0),
                             ("ben", "2026-11-20T12:00:00+00:00", 10.0)):  # fmt: skip
        member = run_manifest.Member(
            id=f"{student}/{SLUG}", result=f"results/{student}/{SLUG}.json", sha256="0" * 64,
            handed_in=hand_in.HandIn(at, "nbgrader timestamp.txt"),
        )  # fmt: skip
        write_result(out, members, graded(student, raw), member)
    manifest = run_manifest.ClassManifest(
        submissions=str(tmp_path), assignment=None,
        options=GradeOptions(late_policy=policy.to_dict()), hidden_tests="x",
        members=tuple(members),
    )  # fmt: skip
    adjust = late.gradebook_adjuster(manifest, out)
    results.write_gradebook(out, [out / m.result for m in members], adjust)
    rows = {r["student"]: r for r in results.read_gradebook(out)["submissions"]}
    assert (rows["ada"]["raw_score"], rows["ada"]["score"]) == (14.0, pytest.approx(11.2))
    assert (rows["ben"]["raw_score"], rows["ben"]["score"]) == (10.0, 10.0)
    table = list(csv.reader((out / "grades.csv").open(newline="")))
    assert table[0][-3:] == ["raw_score", "late", "late_reason"]
    assert table[1][3] == "11.2" and table[1][-3:-1] == ["14.0", "late"]
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\nAda,1,S1,ada,A\nBen,2,S2,ben,A\n"
    )
    lms_export.export(out, "canvas", roster, "blank")
    canvas = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert canvas[2][-1] == "11.2" and canvas[3][-1] == "10"
    side = list(csv.reader((out / "export-canvas-late.csv").open(newline="")))
    assert side[0] == lms_export.LATE_HEADER
    assert side[1][:9] == ["ada", "", "ada", "Self-attention in PyTorch", "14", "11.2", "late",
                           "2", "20"]  # fmt: skip
    assert side[2][6] == "on time"
    # A tampered late field is refused by name, like any other malformed row.
    document = json.loads((out / "grades.json").read_text())
    document["submissions"][0]["late"]["days_late"] = "many"
    (out / "grades.json").write_text(json.dumps(document))
    with pytest.raises(KitError, match="row 1 is malformed"):
        results.read_gradebook(out)


def test_gradescope_applies_the_policy_to_its_metadata(tmp_path, policy) -> None:
    metadata = tmp_path / "submission_metadata.json"
    metadata.write_text(json.dumps({
        "created_at": "2026-11-22T01:00:00.000000+01:00",
        "assignment": {"due_date": "2026-11-30T23:00:00.000000-08:00"},
        "users": [{"email": "someone@example.edu", "id": 77}, {"email": "JDoe", "id": 78}],
    }))  # fmt: skip
    record = {**graded("submission", 14.0), "tests": []}
    decided = apply_late_policy(policy, record, metadata)
    # jdoe, one of the group, has 2 more days: handed in 22 Nov 00:00 UTC is on time.
    assert decided["student"] == "submission" and decided["score"] == 14.0
    alone = json.loads(metadata.read_text())
    alone["users"] = alone["users"][:1]
    metadata.write_text(json.dumps(alone))
    decided = apply_late_policy(policy, record, metadata)
    assert decided["score"] == pytest.approx(11.2)
    assert "Late:" in to_results({"submissions": [decided]})["output"]
    # No deadline in the policy for lesson 3: Gradescope's own due date counts (on time).
    other = {**record, "assignment": "03_causal_attention"}
    assert apply_late_policy(policy, other, metadata)["late"]["status"] == "on time"
    metadata.write_text("{not json")
    broken = apply_late_policy(policy, record, metadata)
    assert broken["score"] == 14.0 and broken["late"]["status"] == "unreadable time"
    assert str(metadata) in broken["late"]["reason"]


def test_an_extension_keeps_the_hour_across_summer_time_and_any_unicode_form(tmp_path) -> None:
    path = tmp_path / "course.toml"
    path.write_text(
        '[late]\npenalty_per_day = 10\ntimezone = "Europe/Paris"\n[late.deadlines]\n'
        '02_self_attention = "2026-10-24 23:59"\n[late.extensions]\n"zo\u00eb" = 2\n'
    )
    policy = late.read_policy(path)
    # 26 October is after the clocks go back: 2 more days end at 23:59 Paris time still.
    nfd = "zoe\u0308"  # the same name, decomposed, as a file system may give it
    handed = hand_in.HandIn("2026-10-26T22:30:00+00:00", "x")  # 23:30 in Paris
    assert late.decide(policy, handed, graded(nfd, 14))["late"]["status"] == "on time"
    assert late.extensions_for_no_one(policy, {nfd}) == []


def test_a_zone_name_counts_only_where_the_policy_agrees(policy) -> None:
    """nbgrader writes its own zone's name; read in a policy of another zone it would be
    hours off, silently: such a time is unreadable, named, and costs nothing."""
    pst = hand_in.HandIn("2026-11-20T20:00:00 PST", "nbgrader timestamp.txt")
    paris = late.decide(policy, pst, graded("ada", 14))  # POLICY is in Europe/Paris
    assert paris["late"]["status"] == "unreadable time" and "marked PST" in paris["late"]["reason"]
    pacific = late.LatePolicy(**{**policy.to_dict(), "timezone": "America/Los_Angeles"})
    # 20:00 PST on the 20th is 04:00 UTC on the 21st: 4 h late, past the grace: day one.
    assert late.decide(pacific, pst, graded("ada", 14))["late"]["days_late"] == 1
    for stamp in ("2199-12-31T23:59:59-12:00", "1971-01-01T00:00:00+14:00"):  # edges stay read
        edge = hand_in.HandIn(hand_in.stored(stamp), "x")
        status = late.decide(pacific, edge, graded("ada", 14))["late"]["status"]
        assert status == ("late" if stamp.startswith("2199") else "on time")


def test_a_link_or_a_huge_file_is_not_a_timestamp(tmp_path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("2026-11-20 23:59:59 UTC\n")
    link = tmp_path / "timestamp.txt"
    os.symlink(target, link)
    assert "not a small regular file" in hand_in.read_timestamp(link).problem
    huge = tmp_path / "huge.txt"
    huge.write_text("2026-11-20 23:59:59 UTC\n" + " " * 10_000)
    assert "not a small regular file" in hand_in.read_timestamp(huge).problem


def test_every_gradebook_writer_applies_the_classs_policy(tmp_path, policy) -> None:
    """A merge and an accepted regrade hand nbgrader the rows the gradebook holds: the
    late policy applied (grade_command.class_records), never the raw results."""
    from attnkit_autograder.classes import grade as grade_command

    out, members = tmp_path / "out", []
    member = run_manifest.Member(
        id=f"ada/{SLUG}", result=f"results/ada/{SLUG}.json", sha256="0" * 64,
        handed_in=hand_in.HandIn("2026-11-22T00:00:00+00:00", "nbgrader timestamp.txt"),
    )  # fmt: skip
    write_result(out, members, graded("ada", 14.0), member)
    manifest = run_manifest.ClassManifest(
        submissions=str(tmp_path), assignment=None,
        options=GradeOptions(late_policy=policy.to_dict()), hidden_tests="x",
        members=tuple(members),
    )  # fmt: skip
    (row,) = grade_command.class_records(out, manifest)
    assert (row["raw_score"], row["score"]) == (14.0, pytest.approx(11.2))


def test_a_slurm_regrade_refuses_a_new_policy(tmp_path, capsys) -> None:
    from attnkit.cli import run as attnkit_run

    new = tmp_path / "new.toml"
    new.write_text("[late]\npenalty_per_day = 10\n")
    argv = ["slurm", "--regrade", "--out", str(tmp_path), "--shards", "2", "--late-policy"]
    assert attnkit_run([*argv, str(new)]) == 1
    assert "records (the late policy included)" in capsys.readouterr().err


def test_extension_names_are_compared_as_people_write_them(tmp_path) -> None:
    path = tmp_path / "course.toml"
    path.write_text(
        "[late]\npenalty_per_day = 10\n[late.deadlines]\n2 = 2026-11-20T23:59:00Z\n"
        '[late.extensions]\n" jdoe@uni.edu" = 2\n'
    )
    policy = late.read_policy(path)
    handed = hand_in.HandIn("2026-11-22T10:00:00+00:00", "x")
    assert late.decide(policy, handed, graded("jdoe@uni.edu", 14))["late"]["status"] == "on time"
    path.write_text(path.read_text() + '"JDoe@uni.edu" = 1\n')
    with pytest.raises(KitError, match=r"line 7: 'JDoe@uni\.edu' is named twice"):
        late.read_policy(path)


def test_an_extension_that_ends_in_the_repeated_hour_takes_the_later_one() -> None:
    policy = late.LatePolicy(
        penalty_per_day=10, timezone="Europe/Paris",
        deadlines={SLUG: "2026-10-23T00:30:00+00:00"},  # 02:30 in Paris, summer time
    )  # fmt: skip
    two_days = late.LatePolicy(**{**policy.to_dict(), "extensions": {"ada": {"*": 2.0}}})
    # 25 October 02:30 happens twice in Paris; the later one is 01:30 UTC.
    handed = hand_in.HandIn("2026-10-25T01:20:00+00:00", "x")
    assert late.decide(two_days, handed, graded("ada", 14))["late"]["status"] == "on time"
