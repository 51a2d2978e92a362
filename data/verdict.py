"""Find, verify and, when online, download the-verdict.txt.

The story is checked against a fixed SHA-256 wherever it comes from, so every lesson,
test and grade sees byte-for-byte the same 20,479 bytes (and 5,145 GPT-2 tokens).

Where the kit looks, in order:

1. ``$ATTNKIT_VERDICT``: an explicit path. If it is set, it must be right; the kit
   does not quietly fall back to something else.
2. ``the-verdict.txt`` in the kit's data folder (``data/`` in a checkout, or
   ``$ATTNKIT_DATA_DIR``).
3. ``shared/data/the-verdict.txt`` beside the checkout: the course-wide copy that
   staff keep next to their clones. It is verified and copied into the data folder.
4. A download from the canonical URL (``$ATTNKIT_VERDICT_URL`` overrides it), written to
   a temporary file, verified, and only then renamed into place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from attnkit.errors import KitError
from attnkit.files import as_new_file

VERDICT_FILENAME = "the-verdict.txt"
VERDICT_SHA256 = "b41e41a68f0398a3154ae69e2e4c0e2694e17fe0d66730536837f1b01935b31f"
VERDICT_SIZE = 20_479
VERDICT_URL = (
    "https://raw.githubusercontent.com/rasbt/LLMs-from-scratch/main/"
    "ch02/01_main-chapter-code/the-verdict.txt"
)
ENV_PATH = "ATTNKIT_VERDICT"
ENV_DATA_DIR = "ATTNKIT_DATA_DIR"
ENV_URL = "ATTNKIT_VERDICT_URL"
DOWNLOAD_TIMEOUT_S = 15.0

HOW_TO_GET_IT = (
    "To fix it, do one of these:\n"
    f"  - download {VERDICT_URL}\n"
    "    and run: attnkit data --from PATH/TO/the-verdict.txt\n"
    f"  - or point ${ENV_PATH} at a copy of the file\n"
    "  - or run `attnkit data` again on a machine that is online"
)


@dataclass(frozen=True)
class VerdictFile:
    """A verified copy of the story and where it was found."""

    path: Path
    source: str  # "environment", "data folder", "shared copy", "download", "--from"


def data_dir() -> Path:
    """The folder the kit keeps its copy in: ``$ATTNKIT_DATA_DIR`` or this package's folder."""
    override = os.environ.get(ENV_DATA_DIR)
    return Path(override) if override else Path(__file__).resolve().parent


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, origin: str) -> Path:
    """Return ``path`` if it holds the exact story; raise a KitError naming it otherwise."""
    if not path.is_file():
        raise KitError(f"{origin}: {path} does not exist or is not a file.", HOW_TO_GET_IT)
    actual = sha256_of(path)
    if actual != VERDICT_SHA256:
        size = path.stat().st_size
        raise KitError(
            f"{origin}: {path} is not the expected the-verdict.txt "
            f"(sha256 {actual[:16]}..., {size:,} bytes; expected {VERDICT_SHA256[:16]}..., "
            f"{VERDICT_SIZE:,} bytes). It may be truncated, re-encoded or a different text.",
            "Delete or replace that file, then run `attnkit data` again.\n" + HOW_TO_GET_IT,
        )
    return path


def shared_copy_candidates() -> list[Path]:
    """Course-wide copies beside the checkout that holds the data folder."""
    checkout = data_dir().parent
    return [checkout.parent / "shared" / "data" / VERDICT_FILENAME]


@contextmanager
def staged(target: Path, origin: str) -> Iterator[Path]:
    """A temporary file beside ``target`` to fill; when the block ends it is verified and
    renamed over ``target``. A failure or a wrong checksum leaves nothing behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".part", delete=False) as tmp:
        tmp_path = Path(tmp.name)
    try:
        yield tmp_path
        verify(tmp_path, origin)
        as_new_file(tmp_path)  # not the temporary file's 0600: the sandbox user reads it
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def install_copy(source: Path, origin: str) -> Path:
    """Verify ``source`` and copy it atomically into the data folder."""
    verify(source, origin)
    target = data_dir() / VERDICT_FILENAME
    if target.resolve() == source.resolve():
        return target
    with staged(target, origin) as tmp_path:
        shutil.copyfile(source, tmp_path)
    return target


def download(url: str, target: Path, progress: bool = True) -> Path:
    """Fetch ``url`` into ``target``: temporary file, checksum, then an atomic rename.

    A failed or corrupted download never leaves a partial file under the real name.
    """
    with staged(target, f"download from {url}") as tmp_path:
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
                total = int(response.headers.get("Content-Length") or 0) or None
                with (
                    open(tmp_path, "wb") as out,
                    tqdm(
                        total=total,
                        unit="B",
                        unit_scale=True,
                        desc=VERDICT_FILENAME,
                        disable=not progress,
                        leave=False,
                    ) as bar,
                ):
                    for chunk in iter(lambda: response.read(1 << 14), b""):
                        out.write(chunk)
                        bar.update(len(chunk))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if isinstance(exc, urllib.error.HTTPError):
                reason = f"HTTP {exc.code} {exc.reason}"
            else:
                reason = getattr(exc, "reason", exc)
            raise KitError(
                f"Could not find {VERDICT_FILENAME} locally, and downloading it from {url} "
                f"failed ({reason}).",
                HOW_TO_GET_IT,
            ) from None
    return target


def locate_verdict(allow_download: bool = True, progress: bool = True) -> VerdictFile:
    """Find a verified copy of the-verdict.txt, in the order the module docstring gives."""
    explicit = os.environ.get(ENV_PATH)
    if explicit:
        return VerdictFile(verify(Path(explicit), f"${ENV_PATH}"), "environment")

    local = data_dir() / VERDICT_FILENAME
    if local.exists():
        return VerdictFile(verify(local, "data folder"), "data folder")

    for candidate in shared_copy_candidates():
        if candidate.is_file():
            return VerdictFile(install_copy(candidate, "shared copy"), "shared copy")

    if not allow_download:
        raise KitError(
            f"{VERDICT_FILENAME} is not in {data_dir()} and downloading is turned off.",
            HOW_TO_GET_IT,
        )
    url = os.environ.get(ENV_URL, VERDICT_URL)
    return VerdictFile(download(url, local, progress=progress), "download")


def read_verdict() -> str:
    """The verified text of the story (downloading it first if needed and possible)."""
    return locate_verdict(progress=False).path.read_text(encoding="utf-8")
