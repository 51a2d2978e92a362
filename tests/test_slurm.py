"""`attnkit slurm` on a real Slurm: Debian's slurm-wlm and munge, one node, started by
``tests/slurm_cluster.sh`` (as root), or a cluster root started for an ordinary user
(``ATTNKIT_TEST_SLURM_CONF``, as ``.ci/run`` does).

A class of 40 notebooks is graded in 4 array tasks. One task is killed with SIGKILL while it
grades; the merge job that runs after the array must then name what is missing and fail
without writing a gradebook. The killed task is resubmitted alone (``sbatch --array=I``),
the merge runs again, and the gradebook must be byte-identical to ``attnkit grade`` on one
machine. Where Slurm cannot be started (not root, or slurm-wlm and munge not installed: the
test installs nothing), the test skips and says why; in
CI (``CI=true``) it fails instead, so it never passes by not running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnkit_autograder.authoring.corpus import (
    add_cell,
    fill_notebook,
    released_notebook,
    write_notebook,
)
from attnkit_autograder.classes import discovery, run_manifest, shards
from attnkit_autograder.quality.benchmark import build_submissions

ROOT = Path(__file__).resolve().parents[1]
SLUG = "02_self_attention"
SHARDS = 4
SLEEPER = "slow_experiment"
"""A student whose last (ungraded) cell sleeps: the shard grading it is still busy when the
test kills it."""


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the real-Slurm test, but {reason}")
    pytest.skip(reason)


def require_slurm() -> None:
    """The test installs nothing on the machine: Debian's slurm-wlm and munge must be there
    (``.ci/run`` installs them)."""
    missing = [tool for tool in ("slurmctld", "slurmd", "munged") if not shutil.which(tool)]
    if missing:
        unavailable(
            f"{', '.join(missing)} not installed: apt-get install slurm-wlm munge "
            "(.ci/run installs them)"
        )


@pytest.fixture(scope="module")
def slurm_env() -> Iterator[dict[str, str]]:
    """The environment in which sbatch, squeue and scancel reach the test cluster."""
    given = os.environ.get("ATTNKIT_TEST_SLURM_CONF")
    if given:
        yield {**os.environ, "SLURM_CONF": given}
        return
    if os.geteuid() != 0:
        unavailable(
            "starting slurmctld and slurmd needs root (as root, or with ATTNKIT_TEST_SLURM_CONF "
            "naming a cluster root started with tests/slurm_cluster.sh)"
        )
    require_slurm()
    folder = tempfile.mkdtemp(prefix="attnkit-slurm-", dir="/tmp")
    script = ROOT / "tests" / "slurm_cluster.sh"
    started = subprocess.run(
        ["bash", str(script), "start", folder], capture_output=True, text=True, timeout=120
    )
    if started.returncode != 0:
        pytest.fail(f"the test cluster did not start: {started.stderr[-2000:]}")
    try:
        yield {**os.environ, "SLURM_CONF": started.stdout.strip()}
    finally:
        subprocess.run(["bash", str(script), "stop", folder], timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def attnkit(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def slurm(env: dict[str, str], *command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done.stdout


def wait_for_jobs(env: dict[str, str], jobs: list[str], limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while slurm(env, "squeue", "-h", "-j", ",".join(jobs)).strip():
        assert time.monotonic() < deadline, slurm(env, "squeue")
        time.sleep(0.5)


def write_class(folder: Path) -> Path:
    build_submissions(folder, SLUG, 39, loop=False, released_dir=ROOT / "assignments")
    released = released_notebook(SLUG, ROOT / "assignments")
    slow = add_cell(fill_notebook(released, SLUG), "import time\ntime.sleep(6)")
    write_notebook(slow, folder / f"{SLEEPER}_{SLUG}.ipynb")
    return folder


@pytest.mark.slow
def test_four_slurm_shards_one_killed_and_resubmitted_merge_into_the_one_machine_gradebook(
    slurm_env: dict[str, str], tmp_path: Path
) -> None:
    start = time.monotonic()
    subs = write_class(tmp_path / "subs")
    single, cluster = tmp_path / "single", tmp_path / "cluster"
    attnkit("grade", str(subs), "--out", str(single), "--jobs", "2")
    print(f"one machine done at {time.monotonic() - start:.1f} s")
    assert len(list((single / "results").glob("*/*.json"))) == 40

    attnkit("slurm", str(subs), "--out", str(cluster), "--shards", str(SHARDS),
            "--cpus", "1", "--mem", "1G", "--time", "00:20:00")  # fmt: skip
    scripts = cluster / "slurm"
    assert "#SBATCH --array=1-4" in (scripts / "shards.sbatch").read_text()
    submitted = slurm(slurm_env, "bash", str(scripts / "submit"))
    array, merge = (word for word in submitted.split() if word.isdigit())

    # Kill the shard that grades the slow student while it is grading.
    victim = next(s for s in discovery.discover(subs) if s.student == SLEEPER)
    index = shards.shard_of(run_manifest.submission_id(victim), SHARDS)
    folder = cluster / f"shard-{index}-of-{SHARDS}"
    deadline = time.monotonic() + 300
    # The slow student is the last of its slice: kill once the first result is in.
    while not list(folder.glob("results/*/*.json")):
        assert time.monotonic() < deadline, slurm(slurm_env, "squeue")
        time.sleep(0.1)
    slurm(slurm_env, "scancel", "--signal=KILL", "--full", f"{array}_{index}")
    wait_for_jobs(slurm_env, [array, merge])
    print(f"array and merge done at {time.monotonic() - start:.1f} s")

    members = run_manifest.read(folder).members
    mine = [m for m in members if shards.shard_of(m.id, SHARDS) == index]
    assert not (folder / run_manifest.member(victim, subs).result).exists()
    assert len(list((folder / "results").glob("*/*.json"))) < len(mine)
    merge_log = (cluster / "logs" / "merge.out").read_text()
    assert "no gradebook was written" in merge_log, merge_log
    assert f"{SLEEPER}-" in merge_log and f"no result in shard-{index}-of-{SHARDS}" in merge_log
    assert "Traceback" not in merge_log
    assert not (cluster / "grades.json").exists()

    # Resubmit the killed task alone, then the merge, as the script's comment says.
    for script in (f"--array={index}", "shards.sbatch"), ("merge.sbatch",):
        job = slurm(slurm_env, "sbatch", "--parsable", *script[:-1], str(scripts / script[-1]))
        wait_for_jobs(slurm_env, [job.strip().split(";")[0]])
        print(f"{script[-1]} done at {time.monotonic() - start:.1f} s")
    for name in ("grades.json", "grades.csv"):
        assert (cluster / name).read_bytes() == (single / name).read_bytes(), name
    log = (cluster / "logs" / f"shard-{index}-of-{SHARDS}.out").read_text()
    assert f"shard {index} of {SHARDS} (from SLURM_ARRAY_TASK_ID)" in log
    assert "already graded" in log  # the retry kept what the killed task had finished
