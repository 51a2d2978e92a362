"""The hidden test suites and the grading engine (import name ``attnkit_autograder``).

Instructor material: never part of the student bundle.

* :mod:`.harness`   the pytest plugin that hands a submission to the suites and records verdicts
* :mod:`.rubric`    the points per graded cell, read from the source notebooks
* :mod:`.nbgrader_bridge` runs one graded cell's hidden tests inside an nbgrader kernel
* ``suites/``       one ordinary pytest file per assignment
"""
