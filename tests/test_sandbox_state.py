"""What one submission leaves behind in the sandbox, and how its workers end.

Nothing a worker changes outlives it (files, mounts, limits, scheduling, environment); a
sandbox that a failed reset ended is replaced on the grader's time, not a student's; a
worker killed from outside the sandbox is told apart from one that the submission ended,
from the zygote's report. The probes run in a real bubblewrap sandbox through the
grader's own IsolatedSubmission, and report by their return value or by the message of
what they raise.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from attnkit.notebook_code import Cell
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.sandbox import zygote as sandbox
from attnkit_autograder.sandbox.errors import SubmissionError, WorkerCrashed
from attnkit_autograder.sandbox.isolation import IsolatedSubmission, Limits
from attnkit_autograder.sandbox.layout import SandboxSettings

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def submission(*sources: str, **kwargs) -> IsolatedSubmission:
    cells = [Cell(i + 1, s) for i, s in enumerate(sources)]
    limits = {"call_timeout": 20.0, "cell_timeout": 20.0, "budget": 90.0, "memory_bytes": 2 << 30}
    limits |= {k: kwargs.pop(k) for k in list(kwargs) if k in limits}
    return IsolatedSubmission(cells, Limits(**limits), **kwargs)


def answer(impl: IsolatedSubmission, name: str = "probe") -> object:
    out = impl.run("call_function", name=name, args=[])["out"]
    return out["array"].tolist() if "array" in out else out


def graded(*sources: str, **kwargs) -> object:
    impl = submission(*sources, **kwargs)
    try:
        return answer(impl)
    finally:
        impl.close()


@pytest.fixture(autouse=True)
def fresh_sandbox():
    sandbox.discard_zygote()
    yield
    sandbox.discard_zygote()


# -- every writable mount is emptied and size-capped by the reset --------------------------------

# Written independently of attnkit.student_process.worker: it parses the mount table itself.
LIST_WRITABLE = r"""
import os, stat
def probe():
    found = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point = fields[4].replace("\\040", " ")
        if "ro" in fields[5].split(","):
            continue
        try:
            if stat.S_ISCHR(os.stat(point).st_mode):
                continue  # a device node bound from the host stores nothing
        except OSError:
            pass
        options = fields[fields.index("-") + 3]
        capped = any(o.startswith("size=") for o in options.split(","))
        found.append(point + ("" if capped else " (no size cap)"))
    raise RuntimeError("WRITABLE " + " ".join(sorted(found)))
"""


def test_the_only_writable_mounts_are_the_capped_ones_the_reset_empties() -> None:
    with pytest.raises(SubmissionError) as raised:
        graded(LIST_WRITABLE)
    writable = raised.value.message.removeprefix("WRITABLE ").split()
    assert writable == ["/dev/shm", "/tmp"], raised.value.message


def test_a_file_planted_anywhere_writable_is_gone_for_the_next_submission() -> None:
    plant = (
        "import os\n"
        "PLANTED = []\n"
        "for line in open('/proc/self/mountinfo'):\n"
        "    point = line.split()[4]\n"
        "    for folder, _, _ in os.walk(point):\n"
        "        try:\n"
        "            open(os.path.join(folder, 'attnkit-planted'), 'w').write('x')\n"
        "            PLANTED.append(folder)\n"
        "        except OSError:\n"
        "            pass\n"
        "def probe():\n    return len(PLANTED)"
    )
    look = (
        "import os\n"
        "def probe():\n"
        "    found = []\n"
        "    for line in open('/proc/self/mountinfo'):\n"
        "        for folder, _, files in os.walk(line.split()[4]):\n"
        "            found += [folder for name in files if name == 'attnkit-planted']\n"
        "    if found:\n"
        "        raise RuntimeError('LEFT ' + ' '.join(sorted(set(found))))\n"
        "    return 0"
    )
    assert graded(plant) >= 2  # /tmp and /dev/shm at least
    assert graded(look) == 0


def test_read_only_folders_and_links_left_behind_are_emptied_by_the_same_sandbox() -> None:
    leave = (
        "import os\n"
        "for top in ('/tmp', '/dev/shm'):\n"
        "    os.makedirs(f'{top}/locked/inner')\n"
        "    open(f'{top}/locked/inner/file', 'w').write('x')\n"
        "    os.symlink('/usr', f'{top}/link')\n"
        "    os.chmod(f'{top}/locked/inner', 0o500)\n"
        "    os.chmod(f'{top}/locked', 0)\n"
        "def probe():\n    return 1"
    )
    assert graded(leave) == 1
    zygote = sandbox._current
    assert graded("import os\ndef probe():\n    return len(os.listdir('/dev/shm'))") == 0
    assert sandbox._current is zygote, "the reset failed and the sandbox was replaced"


# -- every submission starts from the same state ------------------------------------------------

STATE = r"""
import hashlib, os, resource
def _state():
    status = dict(
        line.split(":", 1) for line in open("/proc/self/status") if ":" in line
    )
    limits = {
        name: resource.getrlimit(getattr(resource, name))
        for name in dir(resource) if name.startswith("RLIMIT_")
    }
    mounts = [" ".join(l.split()[3:]) for l in open("/proc/self/mountinfo")]
    files = sorted(
        os.path.join(folder, name)
        for top in ("/tmp", "/dev/shm", "/dev")
        for folder, _, names in os.walk(top)
        for name in names
        if not folder.startswith(os.getcwd())
    )
    environment = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    return {
        "limits": limits,
        "priority": os.getpriority(os.PRIO_PROCESS, 0),
        "affinity": sorted(os.sched_getaffinity(0)),
        "scheduler": os.sched_getscheduler(0),
        "status": [status[k].strip() for k in ("Umask", "Cpus_allowed_list", "NoNewPrivs",
                                               "Seccomp", "CapEff", "SigIgn", "SigBlk")],
        "mounts": mounts,
        "files": files,
        "environment": sorted(environment.items()),
    }
STATE = _state()
def probe():
    import numpy as np
    return np.array([int(hashlib.sha256(repr(STATE[k]).encode()).hexdigest()[:12], 16)
                     for k in sorted(STATE)])
"""
STATE_PARTS = sorted(
    ("limits", "priority", "affinity", "scheduler", "status", "mounts", "files", "environment")
)

# Everything a worker might try to change for the workers after it: the zygote's limits,
# priority and CPUs, its own (inherited by nothing), the environment, files, mounts.
MEDDLE = r"""
import ctypes, os, resource
libc = ctypes.CDLL(None, use_errno=True)
CHANGED = []
for pid in (1, os.getppid(), 0):
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            try:
                resource.prlimit(pid, getattr(resource, name), (1, 1))
                CHANGED.append(f"{name} of {pid}")
            except (OSError, ValueError):
                pass
    for attempt in (
        lambda: os.sched_setaffinity(pid, {0}),
        lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
        lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
        lambda: os.setpriority(os.PRIO_USER, 0, 19),
    ):
        try:
            attempt()
            CHANGED.append(f"scheduling of {pid}")
        except OSError:
            pass
    if libc.syscall(251, 1, pid, 7 | (3 << 13)) == 0:  # ioprio_set: idle class
        CHANGED.append(f"io priority of {pid}")
os.environ["PYTHONPATH"] = "/tmp"
os.umask(0o777)
for folder in ("/tmp", "/dev/shm", "/dev", "/"):
    try:
        open(os.path.join(folder, "attnkit-left"), "w").write("x")
    except OSError:
        pass
def probe():
    return len(CHANGED)
"""


def test_every_submission_starts_from_the_same_state() -> None:
    before = graded(STATE)
    # The meddling worker may change its own limits, so it only reports back; what counts
    # is what the next worker of the same sandbox finds.
    impl = submission(MEDDLE)
    try:
        answer(impl)
        zygote_before = sandbox._current
    finally:
        impl.close()
    after = graded(STATE)
    assert sandbox._current is zygote_before, "the sandbox was replaced in between"
    changed = [part for part, a, b in zip(STATE_PARTS, before, after, strict=True) if a != b]
    assert changed == []


# -- a sandbox that a failed reset ended is replaced on the grader's time -----------------------

# Nested deeper than the reset can remove: the zygote ends, and the grader must start anew.
TOO_DEEP = (
    "import os\n"
    "os.chdir('/tmp')\n"
    "for _ in range(4000):\n"
    "    os.mkdir('d')\n"
    "    os.chdir('d')\n"
    "def probe():\n    return 1"
)


def test_a_replacement_sandbox_starts_outside_the_next_submissions_budget() -> None:
    first = submission(TOO_DEEP)
    try:
        assert answer(first) == 1
        ended = sandbox._current
    finally:
        first.close()
    if sandbox._current is not None:
        # A Python whose rmtree copes with any depth: end the sandbox the way a failed
        # reset does, from outside, so what follows is tested all the same.
        os.killpg(sandbox._current.process.pid, signal.SIGKILL)
        sandbox._current.process.wait()
    assert ended is not None and not ended.alive()
    budget = 1.5
    second = submission("def probe():\n    return 7", budget=budget)
    try:
        assert answer(second) == 7
        started = sandbox._current
    finally:
        second.close()
    assert started is not None and started.startup_seconds > budget, (
        "the sandbox started faster than the budget: this test cannot tell"
    )


# -- how a worker ended: the zygote's report ----------------------------------------------------


def worker_pids() -> list[int]:
    """The host pids of the sandbox's workers: bubblewrap's child is the zygote, whose
    children are the workers."""
    zygote = sandbox._current
    if zygote is None or not zygote.alive():
        return []

    def children(pid: int) -> list[int]:
        found = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                found += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        return found

    try:
        return [w for z in children(zygote.process.pid) for w in children(z)]
    except OSError:
        return []


def kill_first_worker(stop: threading.Event, killed: list[int], after: float = 0.5) -> None:
    """SIGKILL the first worker seen, from outside the sandbox, ``after`` seconds later."""
    while not stop.is_set():
        pids = worker_pids()
        if pids:
            time.sleep(after)
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            return
        time.sleep(0.05)


SLOW = "import time\ndef probe():\n    time.sleep(5)\n    return 1"


def test_a_worker_killed_from_outside_is_reported_as_such() -> None:
    impl = submission(SLOW)
    impl.prepare()
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=kill_first_worker, args=(stop, killed))
    killer.start()
    try:
        with pytest.raises(WorkerCrashed):
            answer(impl)
    finally:
        stop.set()
        killer.join()
        impl.close()
    assert killed
    assert impl.killed_from_outside() == ["killed by SIGKILL"]


def test_a_sandbox_killed_from_outside_is_reported_as_such() -> None:
    impl = submission(SLOW)
    impl.prepare()
    zygote = sandbox._current
    assert zygote is not None
    inner: list[int] = []  # the zygote: bubblewrap's child
    for task in Path(f"/proc/{zygote.process.pid}/task").iterdir():
        inner += map(int, (task / "children").read_text().split())
    killer = threading.Timer(1.0, os.kill, (inner[0], signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(WorkerCrashed):
            answer(impl)
    finally:
        killer.join()
        impl.close()
    assert impl.killed_from_outside() == ["killed by SIGKILL"]


def test_workers_the_grader_ended_or_that_ended_themselves_are_not_blamed_on_the_outside() -> None:
    timed_out = submission(SLOW, call_timeout=1.0)
    try:
        with pytest.raises(Exception, match="time"):
            answer(timed_out)
    finally:
        timed_out.close()
    assert [e.by_sandbox for e in timed_out.workers.endings] == [True]
    assert timed_out.killed_from_outside() == []
    # A worker cannot SIGKILL itself (that would pass for an outside kill): it is refused,
    # and a worker that exits by itself is reported with its status.
    exits = submission(
        "import os, signal\n"
        "def probe():\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    except PermissionError:\n"
        "        os._exit(3)\n"
    )
    try:
        with pytest.raises(WorkerCrashed):
            answer(exits)
    finally:
        exits.close()
    assert [(e.exit, e.signal) for e in exits.workers.endings] == [(3, None)]
    assert exits.killed_from_outside() == []


def test_a_submission_whose_worker_is_killed_from_outside_is_regraded(tmp_path: Path) -> None:
    from attnkit_autograder.authoring.corpus import (
        add_cell,
        fill_notebook,
        released_notebook,
        write_notebook,
    )
    from attnkit_autograder.grading.pipeline import GradeSettings, grade_safely
    from attnkit_autograder.grading.submission import Submission

    slug = "02_self_attention"
    released = released_notebook(slug, ROOT / "assignments")
    # A cell that takes a few seconds keeps the first worker alive long enough to be
    # killed, however fast the machine grades the rest.
    notebook = add_cell(fill_notebook(released, slug), "import time\ntime.sleep(3)", 0)
    path = write_notebook(notebook, tmp_path / "ann.ipynb")
    settings = GradeSettings(GradeOptions(timeout=10.0, cell_timeout=10.0, budget=90.0))
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=kill_first_worker, args=(stop, killed, 1.0))
    killer.start()
    try:
        record = grade_safely(Submission("ann", slug, path), settings)
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was seen to kill"
    assert record["status"] == "graded" and record["score"] == 14.0, record.get("tests")
    assert "killed by SIGKILL from outside the sandbox" in record["run"]["regraded"]


HUGE_PAGES = """
import ctypes, json, mmap, os
from attnkit.student_process.startup import HUGE_PAGE, into_huge_pages

region = mmap.mmap(-1, 8 * HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
region.write(b"x" * len(region))
start = ctypes.addressof(ctypes.c_char.from_buffer(region))
span = f"{start:x}-{start + len(region):x}"
listings = {
    "anonymous": f"{span} rw-p 00000000 00:00 0\\n",
    "a file's": f"{span} rw-p 00000000 08:01 42 /usr/lib/some.so\\n",
    "read-only": f"{span} r--p 00000000 00:00 0\\n",
    "shared": f"{span} rw-s 00000000 00:05 7 /dev/zero (deleted)\\n",
}
backed = {}
for name, listing in listings.items():
    with open("maps", "w") as handle:
        handle.write(listing)
    backed[name] = into_huge_pages("maps")
def settings(name, enabled, this_size=None):
    os.makedirs(f"{name}/hugepages-2048kB")
    with open(f"{name}/enabled", "w") as handle:
        handle.write(enabled + "\\n")
    with open(f"{name}/hpage_pmd_size", "w") as handle:
        handle.write(f"{HUGE_PAGE}\\n")
    if this_size:
        with open(f"{name}/hugepages-2048kB/enabled", "w") as handle:
            handle.write(this_size + "\\n")
    return into_huge_pages("maps", settings=name)  # the anonymous listing, as written last

with open("maps", "w") as handle:
    handle.write(listings["anonymous"])
backed["turned off"] = settings("never", "always madvise [never]")
on, off, inherit = "always [madvise] never", "always madvise [never]", "always [inherit] never"
backed["off for this size"] = settings("size-never", on, off)
backed["inherited off"] = settings("inherit", off, inherit)
huge = 0
with open("/proc/self/smaps") as handle:
    lines = handle.read().splitlines()
for index, line in enumerate(lines):
    if line.startswith(f"{start:x}-"):  # the region's own entry, then its details
        details = [d for d in lines[index + 1 : index + 30] if d.startswith("AnonHugePages:")]
        huge = int(details[0].split()[1]) * 1024 if details else 0
        break
print(json.dumps({"backed": backed, "huge": huge, "size": len(region)}))
"""


def test_the_zygote_backs_only_private_anonymous_memory_with_huge_pages(tmp_path: Path) -> None:
    """into_huge_pages asks the kernel for 2 MiB pages for private, writable, anonymous
    memory only (a file's pages are shared, not the zygote's to move), and says how much it
    got; where the kernel cannot (no MADV_COLLAPSE) or the administrator turned huge pages
    off, it moves nothing and says 0."""
    done = subprocess.run(
        [sys.executable, "-c", HUGE_PAGES],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["backed"]["a file's"] == seen["backed"]["read-only"] == 0
    assert seen["backed"]["shared"] == 0
    # The administrator's "never" is honoured, for all sizes or for this one.
    assert seen["backed"]["turned off"] == seen["backed"]["off for this size"] == 0
    assert seen["backed"]["inherited off"] == 0
    if seen["backed"]["anonymous"] == 0:
        pytest.skip("this kernel backs no memory with huge pages on request (MADV_COLLAPSE)")
    # The whole 2 MiB-aligned part of the region, and the kernel's own account agrees.
    assert seen["size"] - 2 * 1024**2 <= seen["backed"]["anonymous"] <= seen["size"]
    assert seen["huge"] >= seen["backed"]["anonymous"] - 2 * 1024**2


# -- the collector: off while the zygote loads, on for every submission -------------------------

COLLECTOR = r"""
import gc
def probe():
    import numpy as np
    # On, as in any kernel; the zygote's own objects frozen out of its reach.
    return np.array([int(gc.isenabled()), int(gc.get_freeze_count() > 100_000)])
"""


def test_a_workers_collector_is_on_and_the_zygotes_objects_are_frozen() -> None:
    assert graded(COLLECTOR) == [1, 1]


# -- matplotlib: loaded by the zygote only when some submission names it ------------------------

PLOTS = r"""
import sys
LOADED_AT_START = "matplotlib.pyplot" in sys.modules
import matplotlib.pyplot as plt
figure, axes = plt.subplots()
axes.imshow([[0.1, 0.9], [0.5, 0.5]])
figure.canvas.draw()
def probe():
    import numpy as np
    return np.array([int(LOADED_AT_START), int(plt.get_backend().lower() == "agg")])
"""


@pytest.mark.parametrize("plots", [True, False])
def test_a_notebook_plots_whether_or_not_the_zygote_loaded_matplotlib(plots: bool) -> None:
    assert graded(PLOTS, sandbox=SandboxSettings(plots=plots)) == [int(plots), 1]


def test_a_statement_that_ran_to_its_limit_is_left_out_by_every_later_worker() -> None:
    """A submission's second worker (another withheld family, or a new one after a call ran
    out of time) takes the first run's stops: the statement that ran to the cell's limit is
    left out, and the rest of its cell and the later cells still run."""
    sources = (
        "import numpy as np\nbefore = 1\nwhile True:\n    pass\nafter = 2",
        "def probe():\n    return np.array([before, after])",
    )
    first = submission(*sources, cell_timeout=2.0)
    second = submission(*sources, cell_timeout=2.0)
    try:
        assert answer(first) == [1, 2]
        assert set(first.history.failures) == {1}  # ran to its limit once
        second.history.inherit(first.history)
        assert answer(second) == [1, 2]
        assert second.history.failures == {}  # not run, so not paid for, again
    finally:
        first.close()
        second.close()
