"""A class graded in shards merges into the one-machine gradebook, byte for byte; a merge
never writes a partial gradebook; a shard started twice does the same work; regrade names
exactly the students whose grade a changed hidden test moved.

The class is written here, in a student's style (not the references' code): correct
answers, a softmax that forgets the max-subtraction, attention without the scaling, a
stub and a damaged file. The hidden test change is made in a copy of the installed
instructor package, put first on PYTHONPATH, as an upgrade would replace it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.errors import KitError
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.classes import results, run_manifest, shards
from attnkit_autograder.classes.shards import Shard

ROOT = Path(__file__).resolve().parents[1]
SLUG = "02_self_attention"

NO_MAX = """e = torch.exp(x)
return e / e.sum(dim=dim, keepdim=True)"""
UNSCALED = """queries = x @ self.W_query
keys = x @ self.W_key
values = x @ self.W_value
weights = softmax(queries @ keys.transpose(-2, -1), dim=-1)
return weights @ values"""
FORGED = "pia\n  ada lesson 2: 14 -> 0 (-14)\x1b[8m"
"""A student whose file name tries to add a line to the change report."""
FORGOT_MAX = ("nadia", "omar", FORGED)
UNSCALED_STUDENTS = ("quinn", "rosa")
CORRECT = ("ada", "ben", "chen", "dara", "eli", "fay", "gus")


def write_class(folder: Path) -> Path:
    released = released_notebook(SLUG, ROOT / "assignments")
    for name in CORRECT:
        write_notebook(fill_notebook(released, SLUG), folder / f"{name}_{SLUG}.ipynb")
    for name in FORGOT_MAX:
        write_notebook(
            fill_notebook(released, SLUG, {"softmax": NO_MAX}), folder / f"{name}_{SLUG}.ipynb"
        )
    for name in UNSCALED_STUDENTS:
        notebook = fill_notebook(released, SLUG, {"SelfAttention_v1": UNSCALED})
        write_notebook(notebook, folder / f"{name}_{SLUG}.ipynb")
    write_notebook(released, folder / f"stub_{SLUG}.ipynb")
    (folder / f"torn_{SLUG}.ipynb").write_text('{"cells": [')
    return folder


def attnkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The class, graded on one machine, and in three shards (not merged yet)."""
    tmp = tmp_path_factory.mktemp("shards")
    subs = write_class(tmp / "subs")
    ok(attnkit("grade", str(subs), "--out", str(tmp / "single"), "--jobs", "2"))
    for index in (1, 2, 3):
        done = ok(
            attnkit("grade", str(subs), "--out", str(tmp / "sharded"), "--shard", f"{index}/3",
                    "--jobs", "1")
        )  # fmt: skip
        assert f"shard {index} of 3 (from --shard)" in done.stdout
    return {"subs": subs, "single": tmp / "single", "sharded": tmp / "sharded", "tmp": tmp}


def copy_of(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".attnkit-grade.lock"))
    return target


@pytest.mark.slow
def test_three_shards_merge_into_the_one_machine_gradebook(graded, tmp_path) -> None:
    sharded = copy_of(graded["sharded"], tmp_path / "sharded")
    manifests = [run_manifest.read(sharded / f"shard-{i}-of-3") for i in (1, 2, 3)]
    # Every shard lists the whole class, and the slices partition it.
    assert {len(m.members) for m in manifests} == {14}
    graded_by = [{p.relative_to(sharded / f"shard-{i}-of-3").as_posix()
                  for p in (sharded / f"shard-{i}-of-3" / "results").glob("*/*.json")}
                 for i in (1, 2, 3)]  # fmt: skip
    assert sum(map(len, graded_by)) == 14
    assert set().union(*graded_by) == {m.result for m in manifests[0].members}

    done = ok(attnkit("merge", str(sharded)))
    assert "wrote" in done.stdout
    for name in ("grades.json", "grades.csv"):
        assert (sharded / name).read_bytes() == (graded["single"] / name).read_bytes(), name
    merged = run_manifest.read(sharded)
    assert merged.shard is None and merged.merged_from == tuple(
        f"shard-{i}-of-3" for i in (1, 2, 3)
    )
    # The merged folder is a gradebook like any other: merging it again changes nothing.
    before = (sharded / "grades.json").read_bytes()
    ok(attnkit("merge", *(str(sharded / f"shard-{i}-of-3") for i in (3, 1, 2))))
    assert (sharded / "grades.json").read_bytes() == before


@pytest.mark.slow
def test_a_shard_started_twice_does_the_same_work_and_leaves_the_same_result(
    graded, tmp_path
) -> None:
    sharded = copy_of(graded["sharded"], tmp_path / "sharded")
    folder = sharded / "shard-2-of-3"
    before = {p: p.read_bytes() for p in (folder / "results").glob("*/*.json")}
    # A retry on the same OUT, as an engine retries a task: the engine's variable decides.
    retry = ok(
        attnkit("grade", str(graded["subs"]), "--out", str(sharded), "--shards", "3",
                env={"SLURM_ARRAY_TASK_ID": "2"})
    )  # fmt: skip
    assert "shard 2 of 3 (from SLURM_ARRAY_TASK_ID)" in retry.stdout
    assert "already graded" in retry.stdout
    assert {p: p.read_bytes() for p in (folder / "results").glob("*/*.json")} == before
    # A retry on a node that lost everything grades the same slice to the same records.
    fresh = tmp_path / "fresh"
    again = ok(
        attnkit("grade", str(graded["subs"]), "--out", str(fresh), "--shards", "3",
                env={"JOB_COMPLETION_INDEX": "1"})
    )  # fmt: skip
    assert "shard 2 of 3 (from JOB_COMPLETION_INDEX)" in again.stdout
    again_paths = sorted((fresh / "shard-2-of-3" / "results").glob("*/*.json"))
    assert [p.relative_to(fresh) for p in again_paths] == sorted(
        p.relative_to(sharded) for p in before
    )
    assert results.collect(again_paths) == results.collect(sorted(before))


@pytest.mark.slow
def test_a_merge_names_what_is_missing_or_duplicated_and_writes_nothing(graded, tmp_path) -> None:
    sharded = copy_of(graded["sharded"], tmp_path / "sharded")
    members = run_manifest.read(sharded / "shard-1-of-3").members
    # A node that returned nothing: its shard folder is gone.
    shutil.rmtree(sharded / "shard-2-of-3")
    lost = [m for m in members if shards.shard_of(m.id, 3) == 2]
    # A node that died halfway: one result of shard 3 is missing.
    gone = next(m for m in members if shards.shard_of(m.id, 3) == 3)
    (sharded / "shard-3-of-3" / gone.result).unlink()
    # A result that turns up in two shards.
    twice = next(m for m in members if shards.shard_of(m.id, 3) == 1)
    copy = sharded / "shard-3-of-3" / twice.result
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(sharded / "shard-1-of-3" / twice.result, copy)

    done = attnkit("merge", str(sharded))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lost_line = next(line for line in done.stderr.splitlines() if "returned nothing" in line)
    assert f"shard 2 of 3 returned nothing ({len(lost)} submission(s): " in lost_line
    assert all(m.id.removesuffix(".json") in lost_line for m in lost)
    assert f"{gone.id.removesuffix('.json')}: no result in shard-3-of-3" in done.stderr
    assert f"{twice.id.removesuffix('.json')}: duplicated" in done.stderr
    assert "no gradebook was written" in done.stderr
    assert not (sharded / "grades.json").exists() and not (sharded / "grades.csv").exists()
    assert not (sharded / "results").exists()


@pytest.mark.slow
def test_shards_of_different_classes_or_splits_are_refused(graded, tmp_path) -> None:
    sharded = copy_of(graded["sharded"], tmp_path / "sharded")
    path = sharded / "shard-3-of-3" / "class.json"
    document = json.loads(path.read_text())
    document["hidden_tests"] = "0" * 16
    path.write_text(json.dumps(document))
    done = attnkit("merge", str(sharded))
    assert done.returncode == 1 and "graded different classes" in done.stderr
    assert "hidden_tests" in done.stderr and "Traceback" not in done.stderr

    document["hidden_tests"] = run_manifest.read(sharded / "shard-1-of-3").hidden_tests
    path.write_text(json.dumps(document))
    (sharded / "shard-1-of-2").mkdir()
    done = attnkit("merge", str(sharded))
    assert done.returncode == 1 and "split into 2 shards" in done.stderr


def changed_suite(tmp_path: Path) -> Path:
    """A copy of the instructor package whose softmax stability tests use small logits:
    a softmax without the max-subtraction now passes them."""
    package = tmp_path / "upgrade" / "attnkit_autograder"
    shutil.copytree(ROOT / "autograder", package, ignore=shutil.ignore_patterns("__pycache__"))
    suite = package / "lessons" / f"l{SLUG}" / "hidden_tests.py"
    text = suite.read_text()
    huge = re.compile(r"    x = np\.array\(\[\[1000\.0, [^\n]*\n")
    masked = re.compile(r"    masked = np\.array[^\n]*\n    same_call\([^\n]*masked[^\n]*\n")
    assert len(huge.findall(text)) == 2 and len(masked.findall(text)) == 1
    text = huge.sub("    x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)\n", text)
    suite.write_text(masked.sub("", text))
    return package.parent


@pytest.mark.slow
def test_regrade_after_a_hidden_test_change_names_exactly_whose_grade_moved(
    graded, tmp_path
) -> None:
    out = copy_of(graded["single"], tmp_path / "out")
    old = {name: (out / name).read_bytes() for name in ("grades.json", "grades.csv")}
    # Unchanged tests: nothing moves.
    done = ok(attnkit("regrade", str(out)))
    assert "0 of 14 submission(s) changed grade" in done.stdout
    shutil.rmtree(out / "regrade")

    upgrade = {"PYTHONPATH": str(changed_suite(tmp_path))}
    done = ok(attnkit("regrade", str(out), env=upgrade))
    report = json.loads((out / "regrade" / "changes.json").read_text())
    moved = {c["student"]: c for c in report["changed"]}
    assert set(moved) == set(FORGOT_MAX), done.stdout
    for change in moved.values():
        assert change["new_score"] - change["old_score"] == 1.0
        (cell,) = change["cells"]
        assert cell["grade_id"] == "test_softmax_stability"
        assert (cell["old_points"], cell["new_points"]) == (0.0, 1.0)
        assert "NaN" in cell["old_message"] and cell["new_message"] == "passed"
    assert report["hidden_tests"]["old"] != report["hidden_tests"]["new"]
    assert "3 of 14 submission(s) changed grade" in done.stdout
    assert "nadia 02_self_attention: 13 -> 14 (+1)" in done.stdout
    # The forged name stays on its own line, escaped, in the report and on the terminal.
    report_text = (out / "regrade" / "changes.txt").read_text()
    for text in (report_text, done.stdout):
        assert not [line for line in text.splitlines() if line.startswith("  ada ")]
        assert "pia\\n  ada lesson 2: 14 -> 0 (-14)\\x1b[8m 02_self_attention: 13 -> 14" in text
    # The old gradebook stands until the instructor accepts the new one.
    assert {name: (out / name).read_bytes() for name in old} == old

    ok(attnkit("regrade", str(out), "--accept"))
    (kept,) = (out / "previous").iterdir()
    assert {name: (kept / name).read_bytes() for name in old} == old
    assert (kept / "changes.txt").is_file() and not (out / "regrade").exists()
    grades = json.loads((out / "grades.json").read_text())
    scores = {r["student"]: r["score"] for r in grades["submissions"]}
    assert all(scores[name] == 14.0 for name in FORGOT_MAX + CORRECT)
    assert all(scores[name] < 14.0 for name in UNSCALED_STUDENTS)
    assert run_manifest.read(out).hidden_tests == report["hidden_tests"]["new"]


@pytest.mark.slow
def test_results_graded_with_other_tests_or_options_are_never_current(graded, tmp_path) -> None:
    """A run stopped right after it wrote the new class.json must not leave old results
    looking current: each result carries what it was graded with."""
    out = copy_of(graded["single"], tmp_path / "out")
    upgrade = {"PYTHONPATH": str(changed_suite(tmp_path))}
    printed = subprocess.run(
        [sys.executable, "-c", "from attnkit_autograder.classes import run_manifest as m; "
         "print(m.hidden_tests_fingerprint())"],
        capture_output=True, text=True, env={**os.environ, **upgrade}, check=True,
    ).stdout.strip()  # fmt: skip
    document = json.loads((out / "class.json").read_text())
    document["hidden_tests"] = printed  # as the interrupted run with the new tests left it
    (out / "class.json").write_text(json.dumps(document))
    done = ok(attnkit("grade", str(graded["subs"]), "--out", str(out), env=upgrade))
    assert "already graded" not in done.stdout
    scores = {r["student"]: r["score"] for r in json.loads((out / "grades.json").read_text())[
        "submissions"]}  # fmt: skip
    assert all(scores[name] == 14.0 for name in FORGOT_MAX)
    # Other options that decide a result: graded again too.
    done = ok(attnkit("grade", str(graded["subs"]), "--out", str(out), "--budget", "100",
                      env=upgrade))  # fmt: skip
    assert "already graded" not in done.stdout and "graded again" in done.stdout


@pytest.mark.slow
def test_a_regrade_in_shards_merges_to_the_same_report(graded, tmp_path) -> None:
    out = copy_of(graded["sharded"], tmp_path / "out")
    ok(attnkit("merge", str(out)))
    upgrade = {"PYTHONPATH": str(changed_suite(tmp_path))}
    for index in (1, 2):
        done = ok(attnkit("regrade", str(out), "--shard", f"{index}/2", env=upgrade))
        assert f"shard {index} of 2" in done.stdout and "changed grade" not in done.stdout
        assert (out / "regrade" / f"shard-{index}-of-2" / "class.json").is_file()
    assert not (out / "regrade" / "changes.json").exists()
    # A plain regrade merges the shards and reports, as on one machine.
    done = ok(attnkit("regrade", str(out), env=upgrade))
    assert "3 of 14 submission(s) changed grade" in done.stdout
    report = json.loads((out / "regrade" / "changes.json").read_text())
    assert {c["student"] for c in report["changed"]} == set(FORGOT_MAX)
    assert "omar 02_self_attention: 13 -> 14 (+1)" in done.stdout
    ok(attnkit("regrade", str(out), "--accept"))
    assert not [p for p in out.iterdir() if p.name.startswith("shard-")]  # kept in previous/


@pytest.mark.slow
def test_regrade_names_who_left_and_accept_takes_only_a_whole_current_regrade(
    graded, tmp_path
) -> None:
    out = copy_of(graded["single"], tmp_path / "out")
    subs = copy_of(graded["subs"], tmp_path / "subs")
    document = json.loads((out / "class.json").read_text())
    document["submissions"] = str(subs)
    (out / "class.json").write_text(json.dumps(document))
    (subs / f"rosa_{SLUG}.ipynb").unlink()
    done = ok(attnkit("regrade", str(out)))
    assert "1 of 14 submission(s) changed grade" in done.stdout
    assert "rosa 02_self_attention: 9 -> no result (its file has left SUBMISSIONS)" in done.stdout
    # Incomplete: one result of the regrade is gone.
    (victim,) = (out / "regrade" / "results").glob("ada-*/*.json")
    saved = victim.read_bytes()
    victim.unlink()
    refused = attnkit("regrade", str(out), "--accept")
    assert refused.returncode == 1 and "incomplete" in refused.stderr
    victim.write_bytes(saved)
    # Stale: OUT was graded again after the regrade.
    (out / "class.json").write_text(json.dumps(document, indent=2))
    refused = attnkit("regrade", str(out), "--accept")
    assert refused.returncode == 1 and "stale" in refused.stderr
    (out / "class.json").write_text(json.dumps(document))
    ok(attnkit("regrade", str(out), "--accept"))
    grades = json.loads((out / "grades.json").read_text())
    assert "rosa" not in {r["student"] for r in grades["submissions"]}
    again = attnkit("regrade", str(out), "--accept")
    assert again.returncode == 1 and "no finished regrade" in again.stderr


@pytest.mark.slow
def test_a_merge_refuses_forged_results_links_and_what_is_in_the_way(graded, tmp_path) -> None:
    sharded = copy_of(graded["sharded"], tmp_path / "sharded")
    members = run_manifest.read(sharded / "shard-1-of-3").members
    home = {m.id: sharded / f"shard-{shards.shard_of(m.id, 3)}-of-3" for m in members}
    ada, ben, chen = (
        next(m for m in members if m.id.startswith(n + "-")) for n in ("ada", "ben", "chen")
    )
    record = json.loads((home[ada.id] / ada.result).read_text())
    (home[ada.id] / ada.result).write_text(
        json.dumps({**record, "student": "mallory", "score": 99})
    )
    record = json.loads((home[ben.id] / ben.result).read_text())
    del record["student"]
    (home[ben.id] / ben.result).write_text(json.dumps(record))
    (sharded / chen.result).mkdir(parents=True)
    done = attnkit("merge", str(sharded))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        f"{ada.id[:-5]}: its result file is not one the grader wrote (it names another"
        in done.stderr
    )
    assert f"{ben.id[:-5]}: its result file is not one the grader wrote (no student" in done.stderr
    assert f"{sharded / chen.result} is in the way" in done.stderr
    assert not (sharded / "grades.json").exists()

    twice = copy_of(graded["sharded"], tmp_path / "twice")
    backup = copy_of(twice / "shard-1-of-3", tmp_path / "backup" / "shard-1-of-3")
    done = attnkit("merge", str(twice), str(backup), "--out", str(twice))
    assert done.returncode == 1 and "shard 1 of 3 is in 2 folders" in done.stderr
    assert not (twice / "grades.json").exists()

    linked = copy_of(graded["sharded"], tmp_path / "linked")
    (linked / "shard-2-of-3").rename(tmp_path / "elsewhere")
    (linked / "shard-2-of-3").symlink_to(tmp_path / "elsewhere")
    done = attnkit("merge", str(linked))
    assert done.returncode == 1 and "is a link" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_merge_never_puts_back_grades_older_than_the_gradebook_in_out(graded, tmp_path) -> None:
    sharded = copy_of(graded["sharded"], tmp_path / "sharded")
    ok(attnkit("merge", str(sharded)))
    document = json.loads((sharded / "class.json").read_text())
    document["hidden_tests"] = "f" * 16  # as after an accepted regrade with new hidden tests
    (sharded / "class.json").write_text(json.dumps(document))
    before = (sharded / "grades.json").read_bytes()
    done = attnkit("merge", str(sharded))
    assert done.returncode == 1 and "would replace newer grades" in done.stderr
    assert (sharded / "grades.json").read_bytes() == before


def test_limits_that_would_fail_every_student_are_refused(tmp_path) -> None:
    for flag, value in [
        ("--budget", "-1"),
        ("--timeout", "nan"),
        ("--cell-timeout", "0"),
        ("--budget", "1e300"),
        ("--memory-mb", str(2**62)),
    ]:
        done = attnkit("grade", str(tmp_path), "--out", str(tmp_path / "out"), flag, value)
        assert done.returncode == 1 and "not between" in done.stderr, done.stderr
        assert not (tmp_path / "out").exists()


# -- properties: the parts that read names, numbers and files -----------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=60, unique=True), st.integers(1, 12))
def test_shards_partition_any_class(ids: list[str], count: int) -> None:
    slices = [shards.slice_of(ids, Shard(i, count), key=str) for i in range(1, count + 1)]
    assert sorted(x for s in slices for x in s) == sorted(ids)
    assert all(shards.shard_of(x, count) == i + 1 for i, s in enumerate(slices) for x in s)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_parsing_a_shard_is_total(text: str) -> None:
    try:
        shard = shards.parse_shard(text)
    except KitError:
        return
    assert 1 <= shard.index <= shard.count <= shards.MAX_SHARDS
    assert shards.parse_folder(shard.folder) == Shard(shard.index, shard.count, shard.folder)


ENGINE_VARIABLES = (
    *shards.ENGINES,
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    shards.COUNT_VARIABLE,
)


@settings(max_examples=500, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(ENGINE_VARIABLES),
        st.one_of(st.integers(-3, 12).map(str), st.text(max_size=8)),
    ),
    st.one_of(st.none(), st.integers(-2, 12)),
)
def test_the_engine_variables_give_a_shard_or_one_refusal(env: dict, count: int | None) -> None:
    try:
        shard = shards.from_environment(env, count)
    except KitError:
        return
    if shard is not None:
        assert 1 <= shard.index <= shard.count
        assert shard.chosen_by in shards.ENGINES


def test_the_engines_are_read_as_documented() -> None:
    slurm = {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_MAX": "8"}
    assert shards.from_environment(slurm) == Shard(3, 4, "SLURM_ARRAY_TASK_ID")
    # `sbatch --array=2 shards.sbatch` reruns one task: the id is the shard.
    rerun = {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_MAX": "2"}
    assert shards.from_environment(rerun, 4) == Shard(2, 4, "SLURM_ARRAY_TASK_ID")
    assert shards.from_environment({"JOB_COMPLETION_INDEX": "0"}, 3) == Shard(
        1, 3, "JOB_COMPLETION_INDEX"
    )
    batch = {"AWS_BATCH_JOB_ARRAY_INDEX": "4", "ATTNKIT_SHARDS": "5"}
    assert shards.from_environment(batch) == Shard(5, 5, "AWS_BATCH_JOB_ARRAY_INDEX")
    assert shards.from_environment({}) is None
    for env, count, words in [
        ({"JOB_COMPLETION_INDEX": "0"}, None, "--shards N"),
        ({"JOB_COMPLETION_INDEX": "3"}, 3, "numbered 1 to 3"),
        ({"JOB_COMPLETION_INDEX": "0", "SLURM_ARRAY_TASK_ID": "1"}, 2, "two job engines"),
        ({}, 4, "no job engine"),
        ({"SLURM_ARRAY_TASK_ID": "1"}, None, "SLURM_ARRAY_TASK_MIN"),
        ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "1"}, None, "whole number"),
    ]:
        with pytest.raises(KitError, match=words):
            shards.from_environment(env, count)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=20,
)


def class_document() -> dict:
    return {
        "schema": run_manifest.SCHEMA,
        "submissions": "/x",
        "assignment": None,
        "options": {
            "timeout": 10.0,
            "budget": 120,
            "memory_mb": 2048,
            "cell_timeout": 30.0,
            "feedback": False,
            "no_sandbox": False,
            "sandbox_user": None,
            "gradebook": None,
        },
        "hidden_tests": "0",
        "members": [{"id": "a-1/x.json", "result": "results/a-1/x.json", "sha256": ""}],
        "shard": {"index": 2, "count": 3, "chosen_by": "--shard"},
        "kit_version": "0",
        "merged_from": [],
    }


def test_a_class_file_reads_back(tmp_path: Path) -> None:
    (tmp_path / run_manifest.NAME).write_text(json.dumps(class_document()))
    manifest = run_manifest.read(tmp_path)
    assert manifest.shard == Shard(2, 3, "--shard") and len(manifest.members) == 1
    for field, value in [
        ("members", [{"id": "a", "result": "results/../../etc/x.json", "sha256": ""}]),
        ("members", [{"id": "a", "result": "results/a/x.json", "sha256": ""}] * 2),
        ("options", {**class_document()["options"], "feedback": 1}),
        ("options", {**class_document()["options"], "extra": True}),
        ("shard", {"index": 4, "count": 3}),
    ]:
        (tmp_path / run_manifest.NAME).write_text(json.dumps({**class_document(), field: value}))
        with pytest.raises(KitError, match="not a class file"):
            run_manifest.read(tmp_path)


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from(["members", "shard", "options", "submissions", None]))
def test_reading_a_class_file_is_total(tmp_path_factory, value, field: str | None) -> None:
    folder = tmp_path_factory.mktemp("class")
    document = class_document()
    if field is None:
        document = value
    else:
        document[field] = value
    (folder / run_manifest.NAME).write_text(json.dumps(document))
    try:
        manifest = run_manifest.read(folder)
    except KitError:
        return
    for member in manifest.members:
        assert (folder / member.result).resolve().is_relative_to((folder / "results").resolve())


# -- the scripts and manifests the engines run -------------------------------------------------


def test_the_sbatch_scripts_parse_quote_submissions_and_refuse_unsafe_lines(tmp_path) -> None:
    subs = tmp_path / "class of 2026; rm -rf ~"
    subs.mkdir()
    out = tmp_path / "out"
    ok(attnkit("slurm", str(subs), "--out", str(out), "--shards", "3", "--cpus", "2",
               "--partition", "short", "--feedback"))  # fmt: skip
    shards_script = (out / "slurm" / "shards.sbatch").read_text()
    for name in ("shards.sbatch", "merge.sbatch", "submit"):
        assert subprocess.run(["bash", "-n", str(out / "slurm" / name)]).returncode == 0
        assert os.access(out / "slurm" / name, os.X_OK)
    assert "#SBATCH --array=1-3" in shards_script and "#SBATCH --partition=short" in shards_script
    assert f"#SBATCH --output={out}/logs/shard-%a-of-3.out" in shards_script
    # The class folder's name reaches bash as one word, never as a command.
    command = shards_script.splitlines()[-1]
    assert f"'{subs}'" in command and "--shards 3" in command and "--feedback" in command
    assert (out / "logs").is_dir()
    for args, words in [
        (["--out", str(tmp_path / "my out")], "OUT"),
        (["--out", str(tmp_path / "100%")], "OUT"),
        (["--out", str(out), "--partition", "a\n#SBATCH --uid=0"], "--partition"),
        (["--out", str(out), "--time", "1 day"], "--time"),
        (["--out", str(out), "--shards", "0"], "shards"),
    ]:
        argv = ["slurm", str(subs), "--shards", "2", *args]
        done = attnkit(*argv) if "--shards" not in args else attnkit("slurm", str(subs), *args)
        assert done.returncode == 1 and words in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    done = attnkit("slurm", "--regrade", "--out", str(out), "--shards", "2")
    assert done.returncode == 0
    assert "regrade" in (out / "slurm" / "shards.sbatch").read_text().splitlines()[-1]


def test_the_kubernetes_manifests_are_an_indexed_job_and_a_merge_on_one_volume() -> None:
    import yaml

    folder = ROOT / "deploy" / "kubernetes"
    grade = yaml.safe_load((folder / "grade-job.yaml").read_text())
    merge = yaml.safe_load((folder / "merge-job.yaml").read_text())
    spec = grade["spec"]
    assert grade["kind"] == merge["kind"] == "Job" and spec["completionMode"] == "Indexed"
    (container,) = spec["template"]["spec"]["containers"]
    command = container["command"]
    count = command[command.index("--shards") + 1]
    assert int(count) == spec["completions"] == spec["parallelism"]
    assert command[:2] == ["attnkit", "grade"] and "--no-sandbox" not in command
    out = command[command.index("--out") + 1]
    (merger,) = merge["spec"]["template"]["spec"]["containers"]
    assert merger["command"] == ["attnkit", "merge", out] and merger["image"] == container["image"]
    claims = {
        v["persistentVolumeClaim"]["claimName"]
        for job in (grade, merge)
        for v in job["spec"]["template"]["spec"]["volumes"]
    }
    assert len(claims) == 1
    assert "bubblewrap" in (folder / "Dockerfile").read_text()


def test_the_capacity_benchmark_merges_the_class_it_builds(capsys) -> None:
    from attnkit_autograder.quality import capacity

    assert capacity.main(["--submissions", "20", "--shards", "2"]) == 0
    printed = capsys.readouterr().out
    assert "20 submissions of 02_self_attention" in printed and "merge" in printed


def test_a_namesakes_late_arrival_moves_no_one_elses_shard(tmp_path: Path) -> None:
    """A Moodle participant is who the LMS numbered: when a namesake's folder arrives later,
    the first Ada is renamed ``Ada Lovelace_4242`` to stay apart, and stays in her shard."""
    from attnkit_autograder.classes.discovery import discover

    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    download = tmp_path / "download"
    for folder in (
        "Ada Lovelace_4242_assignsubmission_file_",
        "Bo Chen_1111_assignsubmission_file_",
    ):
        write_notebook(notebook, download / folder / f"{SLUG}.ipynb")
    before = {s.lms_number: (s.student, run_manifest.shard_key(s)) for s in discover(download)}
    write_notebook(
        notebook, download / "Ada Lovelace_7777_assignsubmission_file_" / f"{SLUG}.ipynb"
    )
    after = {s.lms_number: (s.student, run_manifest.shard_key(s)) for s in discover(download)}
    assert before["4242"][0] == "Ada Lovelace" and after["4242"][0] == "Ada Lovelace_4242"
    for number in ("4242", "1111"):
        for count in range(2, 9):
            was, now = before[number][1], after[number][1]
            assert shards.shard_of(was, count) == shards.shard_of(now, count)
