"""The kit's measures of itself: mutation testing of the hidden suites, the speed benchmark
against nbgrader, and the capacity figures of a sharded class.
"""
