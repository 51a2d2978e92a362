"""Grading a class: discovery, hand-in times and the late policy, the supervisor of parallel
graders, result files and the gradebook, shards, merge, regrade and feedback reports.
"""
