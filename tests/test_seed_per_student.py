"""`attnkit grade --seed-per-student`: each student's hidden tests draw their random inputs
from a salt of their own (the course secret and their id). Without the option the inputs
are exactly those the suites always had; the book's numbers are the same for everyone; a
correct implementation passes under any salt; answers memorised for one student fail for
another; and the secret is refused when unusable and never written anywhere."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import stat
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.cli import run as attnkit_run
from attnkit.implementation import LocalImplementation
from attnkit.outcome import PASSED
from attnkit.student_process.wire import encode
from attnkit_autograder.classes import grade as grade_command
from attnkit_autograder.classes import regrade, results, run_manifest
from attnkit_autograder.grading import per_student
from attnkit_autograder.grading.harness import (
    Subject,
    hidden_tests,
    reference_implementation,
    run_suite,
)
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.per_student import CourseSecret, CourseSecretError, inputs_of
from attnkit_autograder.grading.suite_support import input_seed, randn, rng, salted
from attnkit_autograder.platforms import gradescope, slurm
from attnkit_autograder.sandbox.cell_history import CellHistory
from attnkit_solutions.exercises import reference_namespace

ROOT = Path(__file__).resolve().parents[1]
SECRET = CourseSecret(b"a course secret of 32 characters")
VALUE = "e3b0c44298fc1c149afbf4c8996fb924-not-anything-else"
"""A secret whose text the real grading run below must never write."""


class Requests:
    """The reference, as a submission, noting a digest of every request the hidden tests
    make (the exercise and every input): what the inputs were, without keeping them."""

    def __init__(self, slug: str) -> None:
        self.inner = LocalImplementation(reference_namespace(slug), label="submission")
        self.label, self.namespace = self.inner.label, self.inner.namespace
        self.keys: list[str] = []

    def run(self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any) -> dict:
        self.keys.append(hashlib.sha256(encode([adapter, list(forbidden), kwargs])).hexdigest())
        return self.inner.run(adapter, forbidden=forbidden, **kwargs)


def requests_of(slug: str, student: str | None) -> list[str]:
    """The requests of ``slug``'s hidden suite when ``student`` (None: no salt) is graded;
    every test must pass."""
    impl, reference = Requests(slug), reference_implementation(slug)
    secret = None if student is None else SECRET
    with inputs_of(secret, slug, student or "", reference):
        verdicts = run_suite(impl, slug, reference)
    assert [v.check for v in verdicts if v.status != PASSED] == []
    return impl.keys


# -- (1) without the option, every input is the one the suites always had ---------------------


def test_without_a_salt_the_inputs_are_the_old_ones() -> None:
    assert [input_seed(seed) for seed in (0, 1, 12, 123, 1006)] == [0, 1, 12, 123, 1006]
    first_row = randn(3, 4, seed=2)[0].tolist()
    assert first_row == [0.18905338644981384, -0.5227484703063965, -0.41306355595588684,
                         -2.44146728515625]  # fmt: skip
    assert rng(12).integers(0, 11, size=(5,)).tolist() == [6, 2, 10, 10, 0]
    assert np.array_equal(
        randn(2, 5, 4, seed=10, dtype=np.float64, scale=3.0),
        np.random.default_rng(10).normal(size=(2, 5, 4)) * 3.0,
    )
    with salted(7):
        assert input_seed(12) != 12
        assert randn(3, 4, seed=2)[0].tolist() != first_row
    # The block is over: nothing of the salt is left.
    assert randn(3, 4, seed=2)[0].tolist() == first_row and input_seed(12) == 12


def test_the_suites_draw_random_inputs_only_through_the_seam() -> None:
    for suite in sorted((ROOT / "autograder" / "lessons").glob("l*/hidden_tests.py")):
        assert "default_rng" not in suite.read_text(encoding="utf-8"), suite.name


OPTIONS = GradeOptions()
"""The default grade options, as a class.json from before the option holds them."""


def test_the_stamp_without_the_option_is_the_old_one() -> None:
    old = "05a0e77820437f91"  # the stamp of these options before the option existed
    assert run_manifest.stamp("0123456789abcdef", OPTIONS) == old
    ours = run_manifest.stamp("0123456789abcdef", replace(OPTIONS, seed_per_student="1a2b3c"))
    theirs = run_manifest.stamp("0123456789abcdef", replace(OPTIONS, seed_per_student="4d5e6f"))
    assert len({old, ours, theirs}) == 3
    record = {"status": "graded", "source_sha256": "ab", "graded_with": ours}
    assert results.is_current(record, "ab", stamp=ours)
    assert not results.is_current(record, "ab", stamp=theirs)  # another secret: graded again


# -- (2) each student has inputs of their own, the same on every run ---------------------------


def test_the_salt_is_the_hmac_of_assignment_and_student() -> None:
    expected = hmac.new(
        b"a course secret of 32 characters", b"02_self_attention\0ann", hashlib.sha256
    ).digest()
    assert SECRET.salt("02_self_attention", "ann") == int.from_bytes(expected[:8], "big")
    salts = {
        SECRET.salt("02_self_attention", "ann"),
        SECRET.salt("02_self_attention", "bob"),
        SECRET.salt("03_causal_attention", "ann"),
        CourseSecret(b"another secret, also 32 chars...").salt("02_self_attention", "ann"),
    }
    assert len(salts) == 4
    assert "course secret" not in repr(SECRET) and SECRET.digest in repr(SECRET)


@pytest.mark.parametrize("slug", ["01_numpy_attention", "03_causal_attention"])
def test_two_students_get_different_inputs_and_a_rerun_the_same(slug: str) -> None:
    ann, again, bob = requests_of(slug, "ann"), requests_of(slug, "ann"), requests_of(slug, "bob")
    plain = requests_of(slug, None)
    assert ann == again
    assert len(ann) == len(bob) == len(plain)
    differing = sum(a != b for a, b in zip(ann, bob, strict=True))
    assert differing > len(ann) // 2
    assert sum(a != p for a, p in zip(ann, plain, strict=True)) == differing


def test_the_reference_forgets_a_students_answers_after_their_tests() -> None:
    slug = "01_numpy_attention"
    reference = reference_implementation(slug)
    requests_of(slug, None)  # the answers every submission shares
    shared = reference.remembered()
    for student in ("ann", "bob", "cy"):
        requests_of(slug, student)
        assert reference.remembered() == shared


class InProcess(LocalImplementation):
    """The reference, standing in for a submission's sandbox (nothing to start or reset)."""

    def __init__(self, namespace: dict) -> None:
        super().__init__(namespace)
        self.history, self.spawned, self.sandbox = CellHistory(), 0, {}
        self.failed = None

    def prepare(self) -> None:
        pass

    def close(self) -> None:
        pass

    def redefined_at(self) -> set[str]:
        return set()

    def memory(self) -> dict:
        return {}


def test_the_pipeline_salts_each_submissions_hidden_tests_and_only_those(monkeypatch) -> None:
    from attnkit_autograder.grading import pipeline
    from attnkit_autograder.grading.submission import Submission
    from attnkit_autograder.grading.suite_support import current_salt

    slug, seen = "01_numpy_attention", []

    def run_suite_noting_the_salt(*args: Any, **kwargs: Any) -> Any:
        seen.append(current_salt())
        return run_suite(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_suite", run_suite_noting_the_salt)
    monkeypatch.setattr(pipeline, "open_sandbox", lambda g: InProcess(reference_namespace(slug)))
    # The settings reach each grader process pickled (forkserver): the secret goes along.
    settings = pickle.loads(pickle.dumps(pipeline.GradeSettings(course_secret=SECRET)))
    for student in ("ann", "bob"):
        grading = pipeline.Grading(Submission(student, slug, Path("x.ipynb")), settings)
        pipeline.run_in_sandbox(grading)
        assert {v.status for v in grading.verdicts} == {PASSED}
        assert current_salt() is None
        assert grading.run["per_student_inputs"] == SECRET.digest
    assert seen == [SECRET.salt(slug, "ann"), SECRET.salt(slug, "bob")]
    grading = pipeline.Grading(Submission("ann", slug, Path("x.ipynb")), pipeline.GradeSettings())
    pipeline.run_in_sandbox(grading)
    assert seen[-1] is None and "per_student_inputs" not in grading.run
    assert "a course secret" not in repr(settings)


# -- (3) a correct implementation passes under any salt ----------------------------------------


@settings(max_examples=3, deadline=None)
@given(salt=st.integers(0, 2**64 - 1))
def test_a_correct_implementation_passes_under_any_salt(salt: int) -> None:
    for slug in ("02_self_attention", "04_multihead_attention"):
        reference = reference_implementation(slug)
        with salted(salt), reference.one_submission():
            verdicts = run_suite(LocalImplementation(reference_namespace(slug)), slug, reference)
        assert [v.check for v in verdicts if v.status != PASSED] == []


@settings(max_examples=2, deadline=None)
@given(salt=st.integers(0, 2**64 - 1))
def test_every_wrong_variant_fails_under_any_salt(salt: int) -> None:
    # The mutation test's wrong variants of lesson 3 (swapped axes, off-by-one masks,
    # dropped scaling, ...): each must fail for every student, not only on the usual inputs.
    from attnkit_autograder.quality.mutation import score_lesson

    reference = reference_implementation("03_causal_attention")
    with salted(salt), reference.one_submission():
        score = score_lesson("03_causal_attention")
    assert score.generated > 50 and score.survived == []


# -- (4) answers memorised for one student fail for another ------------------------------------


class Memorised:
    """A submission that hands back, in order, the answers of one student's tests: outputs
    copied from a classmate, whatever the inputs."""

    def __init__(self, answers: list[dict]) -> None:
        self.inner = LocalImplementation({}, label="submission")
        self.label, self.namespace = "submission", {}
        self.answers = list(answers)

    def run(self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any) -> dict:
        return self.answers.pop(0)


class Answers(Requests):
    def __init__(self, slug: str) -> None:
        super().__init__(slug)
        self.answers: list[dict] = []

    def run(self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any) -> dict:
        answer = super().run(adapter, forbidden=forbidden, **kwargs)
        self.answers.append(answer)
        return answer


BOOK_TESTS = {"test_v1_book_seed", "test_v2_book_seed_and_verdict"}


def test_answers_memorised_for_one_student_fail_for_another() -> None:
    slug = "02_self_attention"
    reference = reference_implementation(slug)
    copied = Answers(slug)
    with inputs_of(SECRET, slug, "ann", reference):
        run_suite(copied, slug, reference)

    def verdicts_for(student: str) -> dict[str, str]:
        with inputs_of(SECRET, slug, student, reference):
            found = run_suite(Memorised(copied.answers), slug, reference)
        return {v.check: v.status for v in found}

    assert set(verdicts_for("ann").values()) == {PASSED}
    bob = verdicts_for("bob")
    failed = {name for name, status in bob.items() if status != PASSED}
    assert "test_v1_matches_reference[3-2-6]" in failed
    assert "test_v2_matches_reference[False]" in failed
    assert len(failed) > len(bob) // 2
    # The book's numbers are everyone's: the copied answers are right there too.
    assert all(bob[name] == PASSED for name in BOOK_TESTS)


# -- (5) the book-number tests are the same for every student ----------------------------------


@pytest.mark.parametrize(
    ("slug", "names"),
    [
        ("02_self_attention", BOOK_TESTS | {"test_loop_matches_reference[book]"}),
        ("03_causal_attention", {"test_causal_attention_on_verdict_and_book_seed"}),
        ("04_multihead_attention", {"test_mha_on_verdict_batch_and_book_seed"}),
    ],
)
def test_the_book_tests_are_the_same_for_every_student(slug: str, names: set[str]) -> None:
    tests = [t for t in hidden_tests(slug) if t.name in names]
    assert {t.name for t in tests} == names
    reference = reference_implementation(slug)

    def requests(student: str | None) -> list[str]:
        impl = Requests(slug)
        with inputs_of(None if student is None else SECRET, slug, student or "", reference):
            for test in tests:
                assert test.run(Subject(impl, slug), Subject(reference, slug)) is None
        return impl.keys

    plain = requests(None)
    assert plain and requests("ann") == plain and requests("bob") == plain


# -- (6) the secret: refused when missing or unusable -------------------------------------------


def secret_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "course-secret"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_an_unusable_secret_is_refused_by_name(tmp_path: Path) -> None:
    cases = [
        (None, {}, "none was given"),
        (secret_file(tmp_path, "\n  \n"), {}, "is empty"),
        (tmp_path / "nowhere", {}, "cannot read the course secret"),
        (tmp_path, {}, "is not a file"),
        (None, {per_student.SECRET_VARIABLE: " "}, "is empty"),
        (None, {per_student.SECRET_VARIABLE: "short"}, "shorter than 16"),
    ]
    for path, environ, words in cases:
        with pytest.raises(CourseSecretError, match=words) as raised:
            per_student.read_secret(path, environ)
        assert raised.value.exit_code == 2 and raised.value.hint
        if path is not None and path != tmp_path / "nowhere":
            assert str(path) in raised.value.message
    readable = secret_file(tmp_path, VALUE, 0o644)
    with pytest.raises(CourseSecretError, match="readable by every user") as raised:
        per_student.read_secret(readable, {})
    assert f"chmod o-rwx {readable}" in str(raised.value)
    readable.chmod(0o640)
    from_file = per_student.read_secret(readable, {per_student.SECRET_VARIABLE: "x" * 40})
    assert from_file.digest == CourseSecret(VALUE.encode()).digest  # the file comes first
    from_environment = per_student.read_secret(None, {per_student.SECRET_VARIABLE: VALUE + "\n"})
    assert from_environment.digest == from_file.digest


def test_the_commands_refuse_a_missing_secret_with_exit_2(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv(per_student.SECRET_VARIABLE, raising=False)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for argv, words in [
        (["grade", str(subs), "--out", str(out), "--seed-per-student"], "none was given"),
        (["grade", str(subs), "--out", str(out), "--course-secret", str(subs)], "only used"),
        (["slurm", str(subs), "--out", str(out), "--shards", "2", "--seed-per-student"],
         "from a file"),
        (["gradescope", str(tmp_path / "g.zip"), "--assignment", "2", "--seed-per-student"],
         "needs --course-secret"),
    ]:  # fmt: skip
        assert attnkit_run(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, err
    assert not out.exists()


def test_a_regrade_needs_the_secret_again(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv(per_student.SECRET_VARIABLE, raising=False)
    out = tmp_path / "out"
    manifest = run_manifest.ClassManifest(
        submissions=str(tmp_path / "subs"),
        assignment=None,
        options=replace(OPTIONS, seed_per_student=SECRET.digest),
        hidden_tests="0",
        members=(),
    )
    run_manifest.write(out, manifest)
    assert run_manifest.read(out).options.seed_per_student == SECRET.digest
    assert attnkit_run(["regrade", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--seed-per-student" in err and "--course-secret FILE" in err
    # Given again, the same secret grades exactly as the first grading did (same stamp);
    # another one is said, and its results are not current.
    same, other = secret_file(tmp_path, "a course secret of 32 characters"), tmp_path / "other"
    other.write_text("another secret, also 32 chars..."), other.chmod(0o600)
    isolation = {"no_sandbox": False, "sandbox_user": None}
    for path, note in ((same, False), (other, True)):
        grading = regrade.regrade_request(manifest, out / "regrade", 1, None, isolation, path)
        settings = grade_command.settings_of(grading)
        assert settings.course_secret.digest == CourseSecret(path.read_bytes().strip()).digest
        first = run_manifest.stamp(run_manifest.hidden_tests_fingerprint(), manifest.options)
        assert (settings.stamp == first) is not note
        assert ("not the one the class was graded with" in capsys.readouterr().err) is note
    # A class.json from before the option reads as graded without it.
    document = json.loads((out / run_manifest.NAME).read_text())
    del document["options"]["seed_per_student"]
    (out / run_manifest.NAME).write_text(json.dumps(document))
    assert run_manifest.read(out).options.seed_per_student is None


# -- the scripts and the zip carry the secret's file, or a copy kept from students ------------


def test_the_sbatch_scripts_pass_the_secrets_file_never_the_secret(tmp_path) -> None:
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    path = secret_file(tmp_path, VALUE)
    argv = ["slurm", str(subs), "--out", str(out), "--shards", "2", "--seed-per-student",
            "--course-secret", str(path)]  # fmt: skip
    assert attnkit_run(argv) == 0
    scripts = {p.name: p.read_text() for p in (out / "slurm").iterdir()}
    task = scripts["shards.sbatch"].splitlines()[-1]
    assert f"--seed-per-student --course-secret {path}" in task
    assert all(VALUE not in text for text in scripts.values())
    path.chmod(0o604)
    assert attnkit_run(argv) == 2  # refused now, not on the cluster
    path.chmod(0o600)
    graded = replace(OPTIONS, seed_per_student=SECRET.digest)
    run_manifest.write(out, run_manifest.ClassManifest(str(subs), None, graded, "0", ()))
    with pytest.raises(CourseSecretError, match="from a file"):
        slurm.commands_for(slurm_job(out, regrade=True), out)
    _shard_task, merge_job = slurm.commands_for(slurm_job(out, True, path), out)
    assert (
        merge_job[-2:] == ["--course-secret", str(path)] and "--seed-per-student" not in merge_job
    )


def slurm_job(out: Path, regrade: bool, course_secret: Path | None = None) -> slurm.SlurmJob:
    return slurm.SlurmJob(out=out, shards=2, regrade=regrade, course_secret=course_secret)


def test_the_gradescope_zip_grades_with_the_students_gradescope_id(tmp_path) -> None:
    target = gradescope.build_zip(
        tmp_path / "a.zip", "02_self_attention", "hidden", ROOT, VALUE.encode()
    )
    with zipfile.ZipFile(target) as archive:
        info = archive.getinfo(gradescope.SECRET_NAME)
        assert stat.S_IMODE(info.external_attr >> 16) == 0o600
        assert archive.read(gradescope.SECRET_NAME).strip() == VALUE.encode()
        assert "--seed-per-student" in archive.read("run_autograder").decode()
        assert f'chmod 600 "$SOURCE/{gradescope.SECRET_NAME}"' in archive.read("setup.sh").decode()
    (tmp_path / "submission_metadata.json").write_text(
        json.dumps({"users": [{"id": "9431", "name": "Bo"}, {"id": 1207, "name": "Al"}]})
    )
    assert gradescope.gradescope_student(tmp_path) == "1207,9431"
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"users": []}))
    with pytest.raises(gradescope.GraderFault):
        gradescope.gradescope_student(tmp_path)


def test_run_autograder_grades_as_the_gradescope_user(tmp_path, monkeypatch) -> None:
    from attnkit_autograder.grading import pipeline

    graded = []

    def graded_under_watch(submission: Any, settings: Any) -> dict:
        graded.append((submission.student, settings.course_secret))
        return {"status": "graded", "score": 1.0, "tests": []}

    monkeypatch.setattr(gradescope, "graded_under_watch", graded_under_watch)
    monkeypatch.setattr(
        gradescope, "sandbox_for_gradescope", lambda options, root: pipeline.GradeSettings(options)
    )
    (tmp_path / "source").mkdir()
    secret = secret_file(tmp_path / "source", VALUE)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "02_self_attention.ipynb").write_text("{}")
    metadata = {"users": [{"id": 9431}]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    gradescope.grade_for_gradescope(tmp_path, "02_self_attention", "hidden", per_student=True)
    gradescope.grade_for_gradescope(tmp_path, "02_self_attention", "hidden")
    (student, used), (plain, none) = graded
    assert student == "9431" and used.digest == CourseSecret(VALUE.encode()).digest
    assert plain == "submission" and none is None
    secret.chmod(0o644)  # setup.sh makes it 600; a copy every user can read is not used
    with pytest.raises(gradescope.GraderFault, match="readable by every user"):
        gradescope.grade_for_gradescope(tmp_path, "02_self_attention", "hidden", True)


# -- (7) one real grading run: the secret is nowhere in OUT ------------------------------------


@pytest.mark.slow
def test_a_real_grading_run_writes_only_the_secrets_digest(tmp_path) -> None:
    from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook

    slug = "01_numpy_attention"
    notebook = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug)
    for student in ("ann", "bob"):
        write_notebook(notebook, tmp_path / "subs" / student / f"{slug}.ipynb")
    path = secret_file(tmp_path, VALUE)
    out = tmp_path / "out"
    environ = {k: v for k, v in os.environ.items() if k != per_student.SECRET_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", "grade", str(tmp_path / "subs"), "--out", str(out),
         "--jobs", "1", "--feedback", "--seed-per-student", "--course-secret", str(path)],
        capture_output=True, text=True, timeout=600, env=environ,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    digest = CourseSecret(VALUE.encode()).digest
    assert run_manifest.read(out).options.seed_per_student == digest
    grades = json.loads((out / "grades.json").read_text())
    assert [r["score"] == r["max_score"] > 0 for r in grades["submissions"]] == [True, True]
    records = [json.loads(p.read_text()) for p in (out / "results").rglob("*.json")]
    assert [r["run"]["per_student_inputs"] for r in records] == [digest, digest]
    forms = {VALUE.encode(), VALUE.encode().hex().encode(), VALUE[:24].encode()}
    written = [p for p in out.rglob("*") if p.is_file()]
    assert len(written) > 5
    for file in written:
        data = file.read_bytes()
        assert not any(form in data for form in forms), file
    assert VALUE not in done.stdout + done.stderr


def test_the_suites_draw_random_inputs_only_through_the_one_seam() -> None:
    """Per-student inputs hold only if every random input comes from suite_support's rng()
    and randn(): a suite that seeded a generator of its own would give every student the
    same inputs while the results still recorded per-student draws."""
    import ast

    suites = sorted((ROOT / "autograder" / "lessons").glob("l*/hidden_tests.py"))
    assert suites
    drawing = {"default_rng", "RandomState", "Generator", "manual_seed", "seed", "rand",
               "randn", "randint", "normal", "uniform", "permutation", "shuffle"}  # fmt: skip
    found = []
    for path in suites:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in drawing:
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                if any(n.split(".")[0] == "random" or "random" in n.split(".") for n in names):
                    found.append(f"{path.name}:{node.lineno}: imports {names}")
    assert found == [], "random inputs outside suite_support.rng/randn:\n" + "\n".join(found)
