"""What the graders' server loads before it forks any grader (see grader_server).

Importing PyTorch and the grading pipeline makes a quarter of a million objects, and Python's
collector, left on, walks all of them several times on the way (about 0.3 s, on the one core
that every grader waits for). It is off during the imports, then ``gc.freeze`` moves what
they made out of its reach for good (Python's own recipe for a server that forks), so that
no grader walks those objects again, or copies their pages by writing to their headers. The
garbage the imports left (about a third of those objects) is frozen with them rather than
collected first: that collection would cost every grader's start another 0.1 s, and the
memory is the server's, shared by every grader it forks.
"""

from __future__ import annotations

import gc

gc.disable()
try:
    import torch  # noqa: F401

    import attnkit_autograder.pipeline  # noqa: F401
finally:
    gc.freeze()
    gc.enable()
