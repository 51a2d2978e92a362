"""What the graders' server loads before it forks any grader (see grader_server).

PyTorch and the grading pipeline load with the collector off, and what they make is frozen
afterwards (attnkit.student_process.startup.frozen_when_loaded, as in each sandbox's zygote):
on the one core every grader waits for, the collector's walks cost about 0.3 s, and no grader
walks those objects again, or copies their pages by writing to their headers.
"""

from __future__ import annotations

from attnkit.student_process.startup import frozen_when_loaded

with frozen_when_loaded():
    import torch  # noqa: F401

    import attnkit_autograder.grading.pipeline  # noqa: F401
