"""One worker's pipes, read and written with deadlines and bounds.

Everything that comes back from a sandboxed process is hostile: every read has a deadline,
a partial frame included, and a size bound, and a submission's replies are bounded in
total, so the grader's own memory stays bounded.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from typing import Any

from attnkit.student_process.wire import HEADER, WireError, decode, encode

from .errors import WorkerCrashed, WorkerTimeout

MAX_FRAME_BYTES = 32 * 1024**2
MAX_SUBMISSION_BYTES = 128 * 1024**2


class Channel:
    """One worker's request and reply pipes, read with deadlines and bounds."""

    def __init__(self, requests: int, replies: int, allowance: list[int]) -> None:
        self.requests, self.replies = requests, replies
        self.allowance = allowance  # bytes this submission may still send, shared by workers
        os.set_blocking(replies, False)
        os.set_blocking(requests, False)

    def send(self, message: Any, deadline: float, doing: str) -> None:
        """Write one request by ``deadline``: a worker that stops reading (its pipe full) is
        out of time, never a wait without end."""
        payload = encode(message)
        data = memoryview(HEADER.pack(len(payload)) + payload)
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout(f"no answer after the time limit while {doing}")
            _, ready, _ = select.select([], [self.requests], [], remaining)
            if not ready:
                continue
            try:
                written = os.write(self.requests, data)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise WorkerCrashed("the submission's process stopped reading") from exc
            data = data[written:]

    def _read(self, count: int, deadline: float, doing: str) -> bytes:
        chunks: list[bytes] = []
        while count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout(f"no answer after the time limit while {doing}")
            ready, _, _ = select.select([self.replies], [], [], remaining)
            if not ready:
                continue
            try:
                chunk = os.read(self.replies, min(count, 1 << 20))
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                raise WorkerCrashed("the submission's process exited while " + doing)
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def receive(self, deadline: float, doing: str) -> Any:
        header = self._read(HEADER.size, deadline, doing)
        (length,) = HEADER.unpack(header)
        if length > MAX_FRAME_BYTES or length > self.allowance[0]:
            raise WorkerCrashed("the submission's process sent more data than the grader accepts")
        self.allowance[0] -= length
        body = self._read(length, deadline, doing)
        try:
            return decode(body)
        except (WireError, RecursionError, MemoryError) as exc:
            raise WorkerCrashed(
                f"the submission's process sent a malformed reply ({exc})"
            ) from None

    def close(self) -> None:
        for fd in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)
