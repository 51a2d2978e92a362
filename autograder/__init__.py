"""The hidden tests and grading (import name ``attnkit_autograder``).

Instructor material: never part of the student bundle. One folder per concern, each
importing only the folders above it in this list (``tests/test_layering.py`` checks it):

* :mod:`.sandbox`    running untrusted code; knows nothing of grading
* :mod:`.lessons`    what each lesson grades: hidden tests, mistakes, points
* :mod:`.grading`    one submission to one result record
* :mod:`.classes`    many submissions: discovery, the supervisor, the gradebook, shards
* :mod:`.authoring`  generated artefacts: the registry, released notebooks, fingerprints
* :mod:`.platforms`  what leaves the kit: Gradescope, nbgrader, LMS exports, Slurm, reports
* :mod:`.quality`    the kit's measures of itself: mutation testing, benchmarks

Above them, the command line (:mod:`.cli`) and :mod:`.nbgrader_bridge`, which every
course's graded cells import by that name.
"""
