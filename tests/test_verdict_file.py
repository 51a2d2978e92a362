"""Finding, verifying and downloading the-verdict.txt, and what the user is told."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnkit.errors import KitError
from attnkit_data import verdict


@pytest.fixture(scope="module")
def story_bytes() -> bytes:
    return verdict.locate_verdict(allow_download=False).path.read_bytes()


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data folder with no env override; downloads go to a closed loopback port."""
    data = tmp_path / "kit" / "data"
    data.mkdir(parents=True)
    monkeypatch.setenv(verdict.ENV_DATA_DIR, str(data))
    monkeypatch.delenv(verdict.ENV_PATH, raising=False)
    monkeypatch.setenv(verdict.ENV_URL, "http://127.0.0.1:9/the-verdict.txt")
    return data


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server on loopback serving files from a folder."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()


def test_story_checksum_and_size(story_bytes: bytes) -> None:
    assert len(story_bytes) == verdict.VERDICT_SIZE


def test_data_folder_copy_is_used(isolated: Path, story_bytes: bytes) -> None:
    (isolated / "the-verdict.txt").write_bytes(story_bytes)
    found = verdict.locate_verdict(allow_download=False)
    assert found.source == "data folder" and found.path == isolated / "the-verdict.txt"


def test_env_var_wins_and_must_be_right(isolated, tmp_path, story_bytes, monkeypatch) -> None:
    good = tmp_path / "elsewhere.txt"
    good.write_bytes(story_bytes)
    monkeypatch.setenv(verdict.ENV_PATH, str(good))
    assert verdict.locate_verdict().source == "environment"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(story_bytes[:-10])
    monkeypatch.setenv(verdict.ENV_PATH, str(bad))
    with pytest.raises(KitError, match=r"ATTNKIT_VERDICT.*bad.txt.*not the expected"):
        verdict.locate_verdict()


def test_corrupted_local_copy_is_reported_not_replaced(isolated: Path, story_bytes) -> None:
    damaged = story_bytes.replace(b"Jack", b"John", 1)
    (isolated / "the-verdict.txt").write_bytes(damaged)
    with pytest.raises(KitError) as err:
        verdict.locate_verdict()
    assert "data folder" in err.value.message and "sha256" in err.value.message
    assert "Delete or replace" in err.value.hint
    assert (isolated / "the-verdict.txt").read_bytes() == damaged, "the user's file was touched"


def test_shared_copy_is_verified_and_installed(isolated: Path, story_bytes) -> None:
    shared = isolated.parent.parent / "shared" / "data"
    shared.mkdir(parents=True)
    (shared / "the-verdict.txt").write_bytes(story_bytes)
    found = verdict.locate_verdict(allow_download=False)
    assert found.source == "shared copy"
    assert (isolated / "the-verdict.txt").read_bytes() == story_bytes


def test_missing_everywhere_offline_says_what_to_do(isolated: Path) -> None:
    with pytest.raises(KitError) as err:
        verdict.locate_verdict(allow_download=False)
    assert "attnkit data --from" in err.value.hint
    with pytest.raises(KitError) as err:
        verdict.locate_verdict()  # the download target refuses the connection
    assert "downloading it from http://127.0.0.1:9" in err.value.message
    assert not list(isolated.iterdir()), "a failed download left files behind"


def test_download_is_verified_then_installed(isolated, server, story_bytes, monkeypatch) -> None:
    url, root = server
    (root / "the-verdict.txt").write_bytes(story_bytes)
    monkeypatch.setenv(verdict.ENV_URL, f"{url}/the-verdict.txt")
    found = verdict.locate_verdict(progress=False)
    assert found.source == "download"
    assert found.path.read_bytes() == story_bytes
    assert [p.name for p in isolated.iterdir()] == ["the-verdict.txt"]


def test_download_with_wrong_checksum_leaves_nothing(isolated, server, monkeypatch) -> None:
    url, root = server
    (root / "the-verdict.txt").write_text("a different story\n")
    monkeypatch.setenv(verdict.ENV_URL, f"{url}/the-verdict.txt")
    with pytest.raises(KitError, match="not the expected"):
        verdict.locate_verdict(progress=False)
    assert not list(isolated.iterdir())
    monkeypatch.setenv(verdict.ENV_URL, f"{url}/missing.txt")
    with pytest.raises(KitError, match="HTTP 404"):
        verdict.locate_verdict(progress=False)


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_cli_data_reports_file_checksum_and_tokens(isolated: Path, story_bytes) -> None:
    source = isolated.parent / "copy.txt"
    source.write_bytes(story_bytes)
    done = run_cli("data", "--from", str(source), env={verdict.ENV_DATA_DIR: str(isolated)})
    assert done.returncode == 0, done.stderr
    assert "5,145" in done.stdout and verdict.VERDICT_SHA256 in done.stdout
    assert (isolated / "the-verdict.txt").read_bytes() == story_bytes


@pytest.mark.parametrize("offline", [True, False])
def test_cli_data_without_file_exits_nonzero_without_traceback(isolated: Path, offline) -> None:
    args = ["data", "--offline"] if offline else ["data"]
    done = run_cli(*args, env={verdict.ENV_DATA_DIR: str(isolated)})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "attnkit data --from" in done.stderr and verdict.VERDICT_URL in done.stderr


def test_cli_data_with_bad_file_names_it(isolated: Path, tmp_path: Path) -> None:
    bad = tmp_path / "not-the-story.txt"
    bad.write_text("nope")
    done = run_cli("data", env={verdict.ENV_DATA_DIR: str(isolated), verdict.ENV_PATH: str(bad)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert str(bad) in done.stderr and "not the expected" in done.stderr


def test_cli_version() -> None:
    done = run_cli("--version", env={})
    assert done.returncode == 0 and done.stdout.startswith("attnkit 0.")
