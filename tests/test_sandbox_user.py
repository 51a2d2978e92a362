"""``--sandbox-user``: the account is the kit's alone, what it can write is found by walking
the filesystem as that user and emptied after every student, its processes end by what the
run started, and the instructor's files are proved unreadable to it.

These need root (the grader switches to the account) and the dedicated account
``attnkit-sandbox`` (``useradd --no-create-home --shell /usr/sbin/nologin attnkit-sandbox``;
.ci/run makes it). The grading tests also need the kit installed in a Python that account
can read (a virtual environment made with Debian's /usr/bin/python3 outside /root): .ci/run
runs this file that way too; elsewhere they skip and say why.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from attnkit.notebook_code import Cell
from attnkit_autograder.sandbox import user as sandbox_user
from attnkit_autograder.sandbox import zygote as sandbox
from attnkit_autograder.sandbox.isolation import IsolatedSubmission, Limits
from attnkit_autograder.sandbox.layout import SandboxSettings, SandboxUnavailable

ROOT = Path(__file__).resolve().parents[1]
ACCOUNT = "attnkit-sandbox"
pytestmark = pytest.mark.slow


def account() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.skip("--sandbox-user needs root")
    try:
        return pwd.getpwnam(ACCOUNT)
    except KeyError:
        pytest.skip(f"no account {ACCOUNT} (create it: useradd --no-create-home {ACCOUNT})")


def as_account(entry: pwd.struct_passwd, *command: str, **kwargs) -> subprocess.Popen:
    prefix = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]
    return subprocess.Popen([*prefix, *command], cwd="/", **kwargs)


def claim_elsewhere(code: str = "") -> subprocess.CompletedProcess:
    """Hold the account in a process of its own (not below this test's processes)."""
    script = (
        "from attnkit_autograder.sandbox.user import hold\n"
        f"hold({ACCOUNT!r})\nprint('claimed', flush=True)\n{code}"
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(autouse=True)
def one_claim_at_a_time():
    """The account is one run's at a time: these tests take turns (across pytest's
    workers), and each ends its process's claim as a run ends it, by letting go."""
    with open(os.path.join(tempfile.gettempdir(), "attnkit-tests-sandbox-user.lock"), "w") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        sandbox.discard_zygote()
        try:
            yield
        finally:
            sandbox.discard_zygote()
            for fd in sandbox_user._HELD.values():
                os.close(fd)
            sandbox_user._HELD.clear()
            sandbox_user.account_of.cache_clear()


# -- the account --------------------------------------------------------------------------------


def test_a_shared_a_system_or_a_busy_account_is_refused() -> None:
    entry = account()
    for name in ("nobody", "daemon", "root"):
        with pytest.raises(SandboxUnavailable) as refused:
            sandbox_user.hold(name)
        said = str(refused.value)
        assert said.startswith(f"--sandbox-user {name}: it is "), said
        assert "useradd --no-create-home" in refused.value.hint
    # A process of the account that this run did not start: a daemon, another run.
    busy = as_account(entry, "sleep", "60")
    try:
        time.sleep(0.3)
        done = claim_elsewhere()
        assert done.returncode != 0 and "claimed" not in done.stdout
        assert f"runs 1 process(es) the kit did not start (pid {busy.pid}, sleep)" in done.stderr
    finally:
        busy.kill()
        busy.wait()


def test_one_run_at_a_time_holds_the_account() -> None:
    account()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from attnkit_autograder.sandbox.user import hold\n"
            f"hold({ACCOUNT!r})\nprint('claimed', flush=True)\nimport time; time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "claimed"
        second = claim_elsewhere()
        assert second.returncode != 0
        assert f"another grading run (pid {holder.pid}) is using that account" in second.stderr
    finally:
        holder.kill()
        holder.wait()
    assert "claimed" in claim_elsewhere().stdout  # free again once the holder is gone


def test_a_file_the_account_could_change_but_the_kit_cannot_empty_is_refused() -> None:
    account()
    top = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        os.chmod(top, 0o755)
        shared = top / "shared-notes.txt"
        shared.write_text("root's\n")
        os.chmod(shared, 0o666)
        done = claim_elsewhere()
        assert done.returncode != 0
        assert f"that user can write {shared}, which the kit cannot empty" in done.stderr
        os.chmod(shared, 0o644)
        open_folder = top / "drop"
        open_folder.mkdir()
        (open_folder / "kept.txt").write_text("root's\n")
        os.chmod(open_folder, 0o777)  # no sticky bit: others' files could be renamed away
        done = claim_elsewhere()
        assert f"that user can write {open_folder}, a folder without the sticky bit" in (
            done.stderr
        )
    finally:
        shutil.rmtree(top)


# -- what the account can write, emptied after every student ------------------------------------

WRITE_EVERYWHERE = r"""
import os, sys
made = []
for folder, folders, files in os.walk("/"):
    if folder.startswith(("/proc", "/sys")):
        folders[:] = []
        continue
    if os.access(folder, os.W_OK):
        for name in ("left-by-a-student", ".hidden-left"):
            path = os.path.join(folder, name)
            try:
                with open(path, "w") as handle:
                    handle.write("state")
                os.makedirs(path + "-dir/deeper", exist_ok=True)
                os.chmod(path + "-dir", 0o000)
                made.append(path)
            except OSError:
                pass
print("\n".join(made))
"""


def test_what_one_student_writes_anywhere_the_next_finds_nothing_of() -> None:
    entry = account()
    claimed = sandbox_user.hold(ACCOUNT)
    keep = Path(tempfile.mkdtemp(dir="/tmp")) / "root-owned.txt"
    keep.write_text("the instructor's")
    try:
        writer = as_account(
            entry,
            "/usr/bin/python3",
            "-I",
            "-c",
            WRITE_EVERYWHERE,
            stdout=subprocess.PIPE,
            text=True,
        )
        made, _ = writer.communicate(timeout=300)
        made = made.split()
        assert "/tmp/left-by-a-student" in made and "/dev/shm/left-by-a-student" in made
        assert {os.path.dirname(p) for p in made} <= set(claimed.places), made
        claimed.empty()
        left = [p for p in made if os.path.lexists(p) or os.path.lexists(p + "-dir")]
        assert left == []
        owned = [
            os.path.join(place, name)
            for place in claimed.places
            for name in os.listdir(place)
            if os.lstat(os.path.join(place, name)).st_uid == entry.pw_uid
        ]
        assert owned == []
        assert keep.read_text() == "the instructor's"  # only the account's own entries go
    finally:
        shutil.rmtree(keep.parent)


def test_the_run_ends_what_it_started_of_the_account_and_nothing_else() -> None:
    entry = account()
    claimed = sandbox_user.hold(ACCOUNT)
    # One child, and one that left its parent (re-parented to this process, the subreaper).
    child = as_account(entry, "sleep", "120")
    as_account(entry, "sh", "-c", "setsid sleep 120 & exit 0").wait()
    time.sleep(0.3)
    mine = sandbox_user._descendants(sandbox_user.processes_of(entry.pw_uid), os.getpid())
    assert child.pid in mine and len(mine) == 2
    claimed.end_processes()
    assert sandbox_user.processes_of(entry.pw_uid) == []
    child.wait(timeout=10)


def test_instructor_files_named_on_the_command_line_are_private(tmp_path: Path) -> None:
    """Every option that takes the instructor's file or folder, and the course secret."""
    from attnkit_autograder.cli import options as cli_options

    parser = __import__("argparse").ArgumentParser()
    cli_options.add_grade_options(parser)
    cli_options.add_secret_option(parser)
    args = parser.parse_args(
        ["--late-policy", "p.toml", "--gradebook", "course", "--course-secret", "s.key"]
    )
    assert set(cli_options.instructor_files(args)) == {
        Path("p.toml"),
        Path("course"),
        Path("s.key"),
    }


def test_the_course_whose_gradebook_is_written_is_private(tmp_path: Path) -> None:
    """`attnkit grade COURSE/submitted` writes into the course's gradebook without naming it:
    the course (its gradebook.db, its source notebooks) is the instructor's all the same."""
    from attnkit_autograder.cli import options as cli_options

    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    (course / "gradebook.db").write_bytes(b"")
    parser = __import__("argparse").ArgumentParser()
    parser.add_argument("submissions")
    cli_options.add_grade_options(parser)
    args = parser.parse_args([str(course / "submitted")])
    assert course in set(cli_options.instructor_files(args))
    named = parser.parse_args([str(course / "submitted"), "--gradebook", str(tmp_path / "g")])
    assert set(cli_options.instructor_files(named)) == {tmp_path / "g"}


def test_the_checkout_a_non_editable_install_came_from_is_secret(tmp_path, monkeypatch) -> None:
    """pip records the folder it installed from: that checkout's references and hidden tests
    are found, and a sandbox user that can read them is refused."""
    import importlib.metadata

    checkout = tmp_path / "attention-kit"
    for folder in ("solutions", "autograder", "assignments"):
        (checkout / folder).mkdir(parents=True)

    class Installed:
        def read_text(self, name: str) -> str:
            return json.dumps({"url": checkout.as_uri(), "dir_info": {}})

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Installed())
    assert sandbox_user.install_sources() == [
        str(checkout / "solutions"),
        str(checkout / "autograder"),
    ]

    class Index:
        def read_text(self, name: str) -> str:
            return json.dumps({"url": "https://files.example/attention_kit.whl"})

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Index())
    assert sandbox_user.install_sources() == []


# -- grading as the account ---------------------------------------------------------------------


def grading_account() -> pwd.struct_passwd:
    entry = account()
    try:
        sandbox_user.check_sandbox_user(ACCOUNT)
    except SandboxUnavailable as refused:
        pytest.skip(f"this installation cannot run --sandbox-user: {refused}")
    return entry


def graded(source: str, settings: SandboxSettings) -> object:
    impl = IsolatedSubmission(
        [Cell(1, source)],
        Limits(call_timeout=60.0, cell_timeout=60.0, budget=240.0, memory_bytes=2 << 30),
        sandbox=settings,
    )
    try:
        out = impl.run("call_function", name="probe", args=[])["out"]
        return out["array"].tolist() if "array" in out else out
    finally:
        impl.close()


LEAVE = WRITE_EVERYWHERE.replace('print("\\n".join(made))', "") + textwrap.dedent(
    """
    def probe():
        return len(made)
    """
)
FIND = textwrap.dedent(
    """
    import os
    def probe():
        me, found = os.getuid(), []
        for folder, folders, files in os.walk("/"):
            if folder.startswith(("/proc", "/sys")) or "attnkit-scratch-" in folder:
                folders[:] = []  # the zygote's own scratch folder, emptied by its reset
                continue
            for name in folders + files:
                if name.startswith("attnkit-scratch-"):
                    continue
                path = os.path.join(folder, name)
                try:
                    if "left-by-a-student" in name or os.lstat(path).st_uid == me:
                        found.append(path)
                except OSError:
                    pass
        if found:
            raise RuntimeError(" ".join(found[:5]))
        return 0
    """
)


def test_a_graded_submission_leaves_nothing_for_the_next() -> None:
    grading_account()
    settings = SandboxSettings(user=ACCOUNT)
    assert graded(LEAVE, settings) > 0
    # The next student, in the same sandbox: nothing the first made, anywhere.
    assert graded(FIND, settings) == 0


def test_sandbox_user_workers_see_only_the_public_packages_and_signal_no_one() -> None:
    grading_account()
    probe = textwrap.dedent(
        """
        import importlib, os, sys
        REACHED = []
        for name in ('attnkit_solutions', 'attnkit_autograder', 'autograder', 'solutions'):
            try:
                importlib.import_module(name)
                REACHED.append(name)
            except ImportError:
                pass
        REACHED += [p for p in sys.path for n in os.listdir(p) if n.startswith('__editable__')]
        for pid in {1, os.getppid()} - {os.getpid()}:
            try:
                os.kill(pid, 0)
                REACHED.append(f'signal {pid}')
            except OSError:
                pass
        def probe():
            if REACHED:
                raise RuntimeError(' '.join(REACHED))
            return 0
        """
    )
    assert graded(probe, SandboxSettings(user=ACCOUNT)) == 0


def test_sandbox_user_refuses_what_that_user_can_read() -> None:
    account()
    top = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's tmp_path is private to root
    try:
        private, shared = top / "private", top / "shared"
        private.mkdir(mode=0o700)
        (private / "grades.json").write_text("{}")
        shared.mkdir(mode=0o755)
        (shared / "alice.ipynb").write_text("{}")
        os.chmod(top, 0o755)
        os.chmod(shared / "alice.ipynb", 0o644)
        assert sandbox_user.readable_below(ACCOUNT, str(private)) == []
        readable = sandbox_user.readable_below(ACCOUNT, str(shared))
        assert readable == [str(shared), str(shared / "alice.ipynb")]
        with pytest.raises(SandboxUnavailable) as refused:
            sandbox_user.check_sandbox_user(ACCOUNT, (str(private), str(shared)))
        # Whichever comes first names its path: a Python the user cannot run, the
        # references (world-readable in a checkout), or the shared folder.
        assert str(refused.value).startswith(f"--sandbox-user {ACCOUNT}: that user can")
        assert " /" in str(refused.value)
    finally:
        shutil.rmtree(top)


def test_sandbox_user_names_a_python_that_user_cannot_read() -> None:
    account()
    interpreter = sandbox.python_paths()[0]
    if sandbox_user.paths_where(ACCOUNT, sandbox_user.CANNOT_USE, [interpreter]) == []:
        pytest.skip("this Python is readable by every user")
    with pytest.raises(SandboxUnavailable) as refused:
        sandbox_user.check_sandbox_user(ACCOUNT)
    assert f"cannot read {interpreter}" in str(refused.value)


def test_the_grade_command_refuses_sandbox_user_with_parallel_graders(tmp_path: Path) -> None:
    account()
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ann_02_self_attention.ipynb").write_text(json.dumps({"cells": []}))
    command = [sys.executable, "-m", "attnkit.cli", "grade", str(tmp_path / "subs")]
    command += ["--out", str(tmp_path / "out"), "--sandbox-user", ACCOUNT, "--jobs", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "--jobs 1" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
