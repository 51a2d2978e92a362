"""Run the commands of a README exactly as written: its fenced ``bash`` blocks, line by line.

Used by the tests of the kit's README and of the student bundle's README, so that every
command a reader is told to type is typed by a test. A command that starts a server
(``jupyter lab``, ``attnkit lab``) is started, waited on until it serves, and stopped.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
SERVERS = ("jupyter lab", "attnkit lab")


def bash_blocks(markdown: str) -> list[str]:
    """The fenced ``bash`` blocks of ``markdown``, in order."""
    return FENCE.findall(markdown)


def commands(markdown: str) -> list[str]:
    """Every command line of every bash block (blank lines and comment lines left out)."""
    lines = (line.strip() for block in bash_blocks(markdown) for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def jupyter_env(env: dict[str, str], config_dir: Path) -> dict[str, str]:
    """``env`` for starting JupyterLab headless in a test: no browser, a free port, and
    allowed as root (CI runs as root). Configuration, so the command stays as written."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "jupyter_server_config.py").write_text(
        "c.ServerApp.allow_root = True\n"
        "c.ServerApp.open_browser = False\n"
        f"c.ServerApp.port = {free_port()}\n"
        "c.ServerApp.ip = '127.0.0.1'\n"
    )
    return {**env, "JUPYTER_CONFIG_DIR": str(config_dir)}


def serve_briefly(
    command: str, cwd: Path, env: dict[str, str], timeout: float = 120
) -> tuple[bool, str]:
    """Start a server command, wait until it says it is running, stop it.
    Returns (it served, its output)."""
    log = cwd / ".server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if re.search(r"is running at|http://127\.0\.0\.1:\d+/lab", log.read_text()):
                served = True
                break
            time.sleep(0.5)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    output = log.read_text()
    log.unlink()
    return served, output


def run(
    command: str, cwd: Path, env: dict[str, str], timeout: float = 1200
) -> subprocess.CompletedProcess:
    """One README command, in bash, as written."""
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def is_server(command: str) -> bool:
    return any(server in command for server in SERVERS)
