"""A student's session in a real JupyterLab, driven in headless Chromium.

JupyterLab (with nbgrader's extensions) serves a released notebook on 127.0.0.1 behind a
token. The browser opens the notebook, the student's answer to one exercise goes into its
cell, all cells run, the self-check output appears, and nbgrader's Validate button reports
the exercises still unfinished. Each step leaves a screenshot in artifacts/.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import chromium_flags

from attnkit_autograder.authoring.released import released_path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
SLUG = "01_numpy_attention"
pytestmark = pytest.mark.slow
DRIVER = shutil.which("chromedriver")
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


@pytest.fixture
def lab(tmp_path: Path):
    work = tmp_path / "student"
    work.mkdir()
    shutil.copyfile(released_path(SLUG, ROOT / "assignments"), work / f"{SLUG}.ipynb")
    # Render every cell (JupyterLab 4 otherwise renders only those in view), so the page
    # text the test reads is the whole notebook.
    settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "HOME": str(tmp_path), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
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
        assert server.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
        time.sleep(0.5)
    try:
        yield base, token, work
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def browser(tmp_path: Path):
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


def wait_for(driver, script: str, timeout: float = 120, what: str = "") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what or script}")


def page_text(driver) -> str:
    return driver.execute_script("return document.body.innerText")


def shot(driver, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"jupyterlab-{name}.png"))


NOTEBOOK = "const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
KERNEL_IDLE = (
    NOTEBOOK + "return !!(w && w.sessionContext && w.sessionContext.session && "
    "w.sessionContext.session.kernel && "
    "w.sessionContext.session.kernel.status === 'idle');"
)
FILL = (
    NOTEBOOK
    + """
const cells = w.content.model.cells;
for (let i = 0; i < cells.length; i++) {
  const cell = cells.get(i);
  const source = cell.sharedModel.getSource();
  if (source.includes('def scale_scores(')) {
    cell.sharedModel.setSource(source.replace(
      '# YOUR CODE HERE\\n    raise NotImplementedError()', 'return scores / d_k ** 0.5'));
    return true;
  }
}
return false;
"""
)


def test_student_fills_runs_checks_and_validates(lab, browser) -> None:
    base, token, _ = lab
    assert status(f"{base}/api/status") == 403, "the server must refuse requests without token"

    browser.get(f"{base}/lab/tree/{SLUG}.ipynb?token={token}")
    wait_for(
        browser,
        NOTEBOOK + "return !!(w && w.content && w.content.widgets.length > 10)",
        what="the notebook to open",
    )
    wait_for(browser, KERNEL_IDLE, what="the kernel to start")
    assert "Lesson 1 · Attention from scratch in NumPy" in page_text(browser)
    shot(browser, "1-opened")

    assert browser.execute_script(FILL), "no scale_scores cell to fill in"
    wait_for(
        browser,
        "return document.body.innerText.includes('return scores / d_k ** 0.5')",
        what="the answer to show in the cell",
    )
    shot(browser, "2-answered")

    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    wait_for(
        browser,
        "return document.body.innerText.includes('scale_scores: 2 of 2 visible checks pass')",
        what="the self-check output",
    )
    wait_for(browser, KERNEL_IDLE, what="all cells to finish")
    text = page_text(browser)
    assert "softmax: not implemented yet" in text
    assert "your grade comes from the hidden tests" in text
    assert "Traceback" not in text
    browser.execute_script(
        NOTEBOOK + "w.content.activeCellIndex = 0; w.content.scrollToCell("
        "w.content.widgets.find(c => c.model.sharedModel.getSource()"
        ".includes('lesson.check(scale_scores)')));"
    )
    time.sleep(1)
    shot(browser, "3-checked")

    # nbgrader's toolbar item: a JupyterLab toolkit element whose label reads "Validate".
    button = wait_for(
        browser,
        "const label = [...document.querySelectorAll('.jp-NotebookPanel-toolbar *')].find("
        "e => e.childElementCount === 0 && e.textContent.trim() === 'Validate');"
        "return label && (label.closest('jp-button, button, .jp-ToolbarButtonComponent') "
        "|| label);",
        what="nbgrader's Validate button",
    )
    button.click()
    dialog = wait_for(
        browser,
        "const d = document.querySelector('.jp-Dialog'); "
        "return d && d.innerText.length > 40 && d.innerText",
        timeout=240,
        what="the validation result",
    )
    shot(browser, "4-validated")
    assert "softmax: not implemented" in dialog
    assert "scale_scores: not implemented" not in dialog
