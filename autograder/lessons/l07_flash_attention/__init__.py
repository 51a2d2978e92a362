"""Lesson 07, FlashAttention on a CPU: what the grader checks (``hidden_tests.py``), the
lesson's classic mistakes (``mistakes.toml``), mutation testing's inputs and judged
equivalents (``mutation.py``) and the kernels its honest answers reach
(``kernels_allowed.json``, written by ``attnkit generate``). It draws no heatmaps.

``MEMORY_MB`` is the memory the lesson's sandboxed workers may add to what they start with
(see :func:`attnkit_autograder.lessons.memory_bound`): the point of the lesson is attention
that never holds the whole score matrix, and the grader proves it from outside the
student's process. The zygote sets it as the worker's hard address-space limit before any of
the notebook's code runs; the memory test (``test_flash_memory``) then calls
``flash_attention`` where one head's score matrix alone would take more than that. The student's
docstring states it (a kit test holds the two together).
"""

MEMORY_MB = 48
"""MiB a lesson-7 worker may map beyond what it holds when it starts (PyTorch, loaded by the
zygote): the notebook's cells and every call together."""

MEMORY_SHAPE = (1, 1, 4096, 8)
"""[batch, heads, T, d] of the memory test's q, k and v: the 4096 x 4096 float32 score
matrix takes 64 MiB for one head alone, more than MEMORY_MB (an answer that builds it head by
head fails too), while a 512 x 512 tile of it takes 1 MiB."""
MEMORY_BLOCKS = (512, 512)
"""block_q, block_k of the memory test's call: the largest the docstring allows (the fewest
tiles, and the most memory each takes)."""
