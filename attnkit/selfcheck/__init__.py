"""The visible self-check: quick checks per exercise, shown to the student.

These checks are public. They test against public facts only (the book's published
numbers, PyTorch's own functions as oracles, mathematical properties) and never import
the reference solutions or the hidden suites. Passing them is a good sign, not a grade.
"""

from .runner import Outcome, run_exercise, visible_checks

__all__ = ["Outcome", "run_exercise", "visible_checks"]
