"""What the kit generates from its sources: the exercise registry, the released notebooks,
the mistakes' fingerprints, the visible checks' kept values, the command reference, and
submissions built from the released notebooks.
"""
