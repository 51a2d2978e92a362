"""Grading one submission: from its file to one result record.

The pipeline (:mod:`.pipeline`) runs the cells and the hidden tests in the sandbox, scores
the verdicts and names the classic mistakes. It imports ``lessons`` and ``sandbox`` only.
"""
