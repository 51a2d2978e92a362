"""Lesson 06, attention at inference: what the grader checks (``hidden_tests.py``),
the lesson's classic mistakes (``mistakes.toml``), mutation testing's inputs and judged
equivalents (``mutation.py``), the feedback's heatmaps (``heatmaps.py``) and the kernels its
honest answers reach (``kernels_allowed.json``, written by ``attnkit generate``).
"""
