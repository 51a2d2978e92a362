"""What leaves the kit for another tool or person: Gradescope, nbgrader's course and
gradebook, LMS exports, Slurm scripts, the class report and its similarity review, the
student bundle and the demo.
"""
