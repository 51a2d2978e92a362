"""Lesson 07, FlashAttention on a CPU: what the grader checks (``hidden_tests.py``), the
lesson's classic mistakes (``mistakes.toml``), mutation testing's inputs and judged
equivalents (``mutation.py``) and the kernels its honest answers reach
(``kernels_allowed.json``, written by ``attnkit generate``). It draws no heatmaps.

``MEMORY_MB`` is the memory the lesson's sandboxed workers may add to what they start with
(see :func:`attnkit_autograder.lessons.memory_bound`): the point of the lesson is attention
that never holds the whole score matrix, and the grader proves it from outside the
student's process. The zygote sets it as the worker's hard address-space limit before any of
the notebook's code runs; the memory test (``test_flash_memory``) then calls
``flash_attention`` where the score matrix alone would take twice as much. The student's
docstring states it (a kit test holds the two together).
"""

MEMORY_MB = 32
"""MiB a lesson-7 worker may map beyond what it holds when it starts (PyTorch, loaded by the
zygote): the notebook's cells and every call together."""

MEMORY_SHAPE = (2, 2, 2048, 8)
"""[batch, heads, T, d] of the memory test's q, k and v: the [2, 2, 2048, 2048] float32
score matrix takes 64 MiB, twice MEMORY_MB, while a 256 x 256 tile of it takes 1 MiB."""
MEMORY_BLOCKS = (256, 256)
"""block_q, block_k of the memory test's call: the largest the docstring allows."""
