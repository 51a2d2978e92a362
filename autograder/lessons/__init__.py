"""What each lesson grades: its hidden tests, catalogued mistakes, points (the rubric),
mutation inputs and judged equivalents, allowed kernels and heatmap wiring.

Content, not machinery: it imports only the public ``attnkit`` package and the sandbox.
"""
