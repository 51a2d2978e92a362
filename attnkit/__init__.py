"""attention-kit: an autograded exercise kit that teaches self-attention."""

__version__ = "0.1.0"
