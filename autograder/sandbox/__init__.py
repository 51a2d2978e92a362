"""Running untrusted code: the bubblewrap sandbox, its zygote, and the grader's side of a
sandboxed submission (requests, replies with deadlines and bounds).

This layer knows nothing of grading: it runs cells and answers calls. Every folder of
``attnkit_autograder`` may import it; it imports none of them.
"""
