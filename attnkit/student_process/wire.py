"""The byte format between the grader and a sandboxed worker: plain data, no pickle.

A message is one JSON document plus the raw bytes of its arrays:

    [8 bytes: JSON length, big-endian] [JSON] [array bytes, back to back]

In the JSON, an array is ``{"__nd__": [offset, nbytes], "dtype": "<f4", "shape": [2, 3]}``.
Decoding checks everything that comes from the worker: the framing, that every dtype
is a plain numeric one from an allowlist, that each array's byte count matches its
shape, and overall size limits. Nothing in a message can make the grader run code.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

HEADER = struct.Struct(">Q")
CELL_LIMITS = 2
"""A cell runs for at most this many of its time limits: one for a statement that ran to
the limit, one more for the statements after it (see the worker's ``run_whole_cell``)."""
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
MAX_JSON_BYTES = 4 * 1024 * 1024
ALLOWED_DTYPES = frozenset(
    np.dtype(t).str
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
    )
)


class WireError(ValueError):
    """A message that is not well-formed; the worker that sent it is not trusted further."""


def encode(value: Any) -> bytes:
    buffers: list[bytes] = []
    offset = 0

    def walk(item: Any) -> Any:
        nonlocal offset
        if isinstance(item, np.ndarray | np.generic) and not isinstance(item, np.str_):
            array = np.array(
                item, copy=True, order="C"
            )  # keeps 0-d shapes, unlike ascontiguousarray
            if array.dtype.str not in ALLOWED_DTYPES:
                array = array.astype(np.float64)
            data = array.tobytes()
            ref = {
                "__nd__": [offset, len(data)],
                "dtype": array.dtype.str,
                "shape": list(array.shape),
            }
            buffers.append(data)
            offset += len(data)
            return ref
        if isinstance(item, dict):
            return {str(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        if item is None or isinstance(item, bool | int | float | str):
            return item
        return repr(item)[:200]

    document = json.dumps(walk(value), allow_nan=True).encode("utf-8")
    return HEADER.pack(len(document)) + document + b"".join(buffers)


MAX_DIMENSIONS = 32
MAX_ELEMENTS = MAX_MESSAGE_BYTES
"""No array in a message can hold more elements than a message has bytes."""


def decode(message: bytes) -> Any:
    """The value a message holds. Total: any bytes at all either decode or raise
    :class:`WireError`, never another exception (the bytes come from student code)."""
    try:
        return _decode(message)
    except WireError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError, MemoryError) as exc:
        raise WireError(f"message is malformed ({type(exc).__name__})") from None


def _decode(message: bytes) -> Any:
    if not isinstance(message, bytes | bytearray | memoryview):
        raise WireError("message is not bytes")
    if len(message) < HEADER.size or len(message) > MAX_MESSAGE_BYTES:
        raise WireError(f"message of {len(message)} bytes is outside the allowed size")
    (json_length,) = HEADER.unpack_from(message)
    if json_length > MAX_JSON_BYTES or HEADER.size + json_length > len(message):
        raise WireError("message header is inconsistent")
    try:
        document = json.loads(
            bytes(message[HEADER.size : HEADER.size + json_length]).decode("utf-8")
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and integers longer than Python will parse.
        raise WireError(f"message JSON is malformed: {type(exc).__name__}") from None
    data = memoryview(message)[HEADER.size + json_length :]

    def walk(item: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise WireError("message nests too deeply")
        if isinstance(item, dict):
            if "__nd__" in item:
                return array(item)
            return {k: walk(v, depth + 1) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, depth + 1) for v in item]
        return item

    def whole(value: Any) -> int:
        """A JSON integer, never a bool, a float or anything else."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise WireError("array reference is malformed")
        return value

    def array(ref: dict[str, Any]) -> np.ndarray:
        bounds, dtype_str, raw_shape = ref.get("__nd__"), ref.get("dtype"), ref.get("shape")
        if not (isinstance(bounds, list) and len(bounds) == 2 and isinstance(raw_shape, list)):
            raise WireError("array reference is malformed")
        start, nbytes = whole(bounds[0]), whole(bounds[1])
        shape = tuple(whole(s) for s in raw_shape)
        if not isinstance(dtype_str, str) or dtype_str not in ALLOWED_DTYPES:
            raise WireError(f"dtype {str(dtype_str)[:20]!r} is not allowed")
        dtype = np.dtype(dtype_str)
        if any(s < 0 for s in shape) or len(shape) > MAX_DIMENSIONS:
            raise WireError("array shape is invalid")
        count = 1
        for size in shape:  # Python integers: no silent overflow, unlike np.prod
            count *= size
            if count > MAX_ELEMENTS:
                raise WireError("array shape is invalid")
        if start < 0 or nbytes != count * dtype.itemsize or start + nbytes > len(data):
            raise WireError("array bytes do not match its shape")
        return np.frombuffer(data[start : start + nbytes], dtype=dtype).reshape(shape).copy()

    return walk(document)
