"""Shared fixtures for the kit's own tests."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

# The README's test command runs one pytest worker per core (`-n auto`). Each process, and
# every process it starts, computes with one thread: the tensors are tiny, and PyTorch's
# spinning thread pools would otherwise fight each other for the same cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Every lesson.check and attnkit check adds to the learner's progress record
# (attnkit.progress): the kit's own thousands of checks go to a throwaway one, in this
# process and every process it starts, never to the developer's.
os.environ["ATTNKIT_PROGRESS"] = os.path.join(tempfile.mkdtemp(prefix="attnkit-test-"), "p.jsonl")

# The tests of Ctrl-C (an interrupted run, a signal held back between two renames) need a
# process where SIGINT raises KeyboardInterrupt, and children that inherit no ignored
# SIGINT: a shell starts a background job (`cmd &` in a script) with SIGINT ignored, and
# Python keeps an ignored SIGINT ignored.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pytest
import torch

from attnkit.book import BOOK_INPUTS


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(Path(os.environ["ATTNKIT_PROGRESS"]).parent, ignore_errors=True)


@pytest.fixture
def book_inputs() -> torch.Tensor:
    return torch.from_numpy(BOOK_INPUTS.copy())


@pytest.fixture(scope="session")
def verdict_text() -> str:
    from attnkit_data import read_verdict

    return read_verdict()


def chromium_flags(profile: str, window: str = "1200,1500") -> list[str]:
    """Headless Chromium that reaches nothing but loopback, with a throwaway profile."""
    return [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--user-data-dir={profile}",
        f"--window-size={window}",
    ]


# -- order and distribution --------------------------------------------------------------------
# With `-n auto`, each test file is one unit of work for one worker (its module fixtures, such
# as a graded corpus, are built once), except the files in SPREAD, whose tests are independent
# and go to whichever worker is free. The long files start first, so that no worker is left
# running one alone at the end; without workers, the fast tests run first.
LONGEST_FIRST = (
    "test_readme.py",
    "test_wheel_install.py",
    "test_fairness.py",
    "test_shards.py",
    "test_slurm.py",
    "test_grade_run.py",
    "test_grader_hostile.py",
    "test_withheld_attacks.py",
    "test_class_of_40.py",
    "test_student_bundle.py",
    "test_notebooks_execute.py",
    "test_grader_engine.py",
    "test_course_loop.py",
    "test_sandbox_state.py",
    "test_similarity.py",
    "test_diagnosis.py",
    "test_diagnosis_corpus.py",
    "test_hint_ladder.py",
    "test_learner_browser.py",
)
SPREAD = ("test_readme.py",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    distributed = "PYTEST_XDIST_WORKER" in os.environ  # set in each worker of `-n`

    def rank(item: pytest.Item) -> int:
        if distributed:
            name = item.path.name
            return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
        return 1 if item.get_closest_marker("slow") else 0

    items.sort(key=rank)  # stable: the order within a rank is pytest's


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's scheduling by scope, where a scope is a test file (or one test, in SPREAD),
    in the order the workers collected (see above)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if Path(path).name in SPREAD else path

    config.option.loadscopereorder = False
    return ByFile(config, log)
