"""What the graders' server loads before it forks any grader (see supervisor.grader_context).

Importing PyTorch and the grading pipeline makes a quarter of a million objects, and Python's
collector, left on, walks all of them several times on the way (about 0.3 s, on the one core
that every grader waits for). It is off during the imports; one collection afterwards frees
what they left, and ``gc.freeze`` moves the rest out of its reach for good, so that no grader
walks them again, or copies their pages by writing to their headers.
"""

from __future__ import annotations

import gc

gc.disable()
try:
    import torch  # noqa: F401

    import attnkit_autograder.pipeline  # noqa: F401
finally:
    gc.collect()
    gc.freeze()
    gc.enable()
