"""The self-learner's pages in a real browser (headless Chromium): the progress page that
`attnkit progress` writes, and the JupyterLab that `attnkit lab` starts, which shows no
nbgrader instructor menu but keeps the Validate button. Screenshots go to artifacts/."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import chromium_flags
from test_jupyterlab_student import (
    ARTIFACTS,
    BROWSER,
    DRIVER,
    KERNEL_IDLE,
    NOTEBOOK,
    free_port,
    page_text,
    status,
    wait_for,
)

from attnkit.cli import main
from attnkit.notebook import Lesson
from attnkit_autograder.authoring.released import released_path

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
pytestmark = pytest.mark.slow


@pytest.fixture
def browser(tmp_path: Path):
    """Headless Chromium, as tests/test_jupyterlab_student.py drives it."""
    if DRIVER is None or BROWSER is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium and chromium-driver: .ci/run installs them")
        pytest.skip("chromium-driver is not installed (.ci/run installs it)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = BROWSER
    for flag in chromium_flags(str(tmp_path / "chrome"), window="1400,1100"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def softmax_without_max(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_right(x, axis=-1):
    shift = np.max(x, axis=axis, keepdims=True)
    exps = np.exp(x - np.where(np.isfinite(shift), shift, 0.0))
    totals = exps.sum(axis=axis, keepdims=True)
    return exps / np.where(totals == 0, 1.0, totals)


def wrong_triangle(num_tokens):
    return np.tril(np.ones((num_tokens, num_tokens), dtype=bool), k=-1)


def causal_mask(num_tokens):
    return np.triu(np.ones((num_tokens, num_tokens), dtype=bool), k=1)


def test_the_progress_page_shows_the_chart_and_the_mistakes_fixed(
    browser, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("ATTNKIT_PROGRESS", str(tmp_path / "progress.jsonl"))
    lesson = Lesson(SLUG)
    with np.errstate(all="ignore"):
        for name, function in (
            ("softmax", softmax_without_max),
            ("causal_mask", wrong_triangle),
            ("softmax", softmax_without_max),
            ("softmax", softmax_right),
            ("causal_mask", causal_mask),
        ):
            lesson.check(function, {name: function})
    page = tmp_path / "progress.html"
    assert main(["progress", "--html", str(page)]) == 0
    capsys.readouterr()
    browser.set_window_size(1100, 1000)
    browser.get(page.as_uri())
    text = page_text(browser)
    assert "Lesson 1 · Attention from scratch in NumPy: 2 of 6 pass" in text
    assert "no max-subtraction" in text and "the wrong triangle" in text
    assert text.count("fixed 20") == 2
    drawn = browser.execute_script(
        "return [...document.querySelectorAll('svg rect')].map(r => r.getAttribute('fill'))"
    )
    assert drawn.count("#2e7d32") >= 4 and "#ef6c00" in drawn  # passed segments, mistakes
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "progress-page.png"))


@pytest.fixture
def learner_lab(tmp_path: Path):
    work = tmp_path / "clone"
    (work / "assignments" / SLUG).mkdir(parents=True)
    (work / "assignments" / SLUG / f"{SLUG}.ipynb").write_bytes(
        released_path(SLUG, ROOT / "assignments").read_bytes()
    )
    settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
        "ATTNKIT_PROGRESS": str(tmp_path / "data" / "progress.jsonl"),
    }
    started = subprocess.run(
        [sys.executable, "-m", "attnkit", "start", "1"], cwd=work, env=env, capture_output=True
    )
    assert started.returncode == 0, started.stderr
    port, token = free_port(), secrets.token_hex(16)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "attnkit",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={work}",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while status(f"{base}/api/status?token={token}") != 200:
        assert server.poll() is None and time.monotonic() < deadline, "attnkit lab did not start"
        time.sleep(0.5)
    try:
        yield base, token
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_attnkit_lab_hides_nbgraders_instructor_menus(learner_lab, browser) -> None:
    base, token = learner_lab
    browser.get(f"{base}/lab/tree/work/{SLUG}.ipynb?token={token}")
    wait_for(
        browser,
        NOTEBOOK + "return !!(w && w.content && w.content.widgets.length > 10)",
        what="the learner's copy to open",
    )
    wait_for(browser, KERNEL_IDLE, what="the kernel to start")
    folded = browser.execute_script(NOTEBOOK + "return w.content.widgets[0].inputHidden")
    assert folded is True, "the install cell is shown folded"
    commands = browser.execute_script(
        "const c = window.jupyterapp.commands;"
        "return ['nbgrader:open-formgrader', 'nbgrader:open-course-list', "
        "'nbgrader:open-create-assignment', 'nbgrader:open-assignment-list']"
        ".filter(id => c.hasCommand(id));"
    )
    assert commands == [], commands
    menus = browser.execute_script(
        "return [...document.querySelectorAll('.lm-MenuBar-itemLabel')].map(e => e.textContent)"
    )
    assert "File" in menus and not any("nbgrader" in m.lower() for m in menus), menus
    wait_for(
        browser,
        "return [...document.querySelectorAll('.jp-NotebookPanel-toolbar *')].some("
        "e => e.childElementCount === 0 && e.textContent.trim() === 'Validate')",
        what="nbgrader's Validate button, which stays",
    )
    assert "Lesson 1 · Attention from scratch in NumPy" in page_text(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "attnkit-lab.png"))
