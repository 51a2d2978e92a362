"""Code that runs in the student's process, never in the grader's.

In the grading sandbox: the zygote (:mod:`.zygote`) and the workers it forks
(:mod:`.worker`), which speak :mod:`.wire` to the grader. Everywhere a submission's code
runs, the sandbox's workers and the self-check in the notebook alike: the recorder of
library calls (:mod:`.recorder`). Nothing here is trusted by the grader: the grader decides
from values it computed itself.
"""
