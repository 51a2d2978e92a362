# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "left a %debug line at the end of her attention cell from an earlier session; Jupyter prints that there is nothing to debug"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "SelfAttention_v1",
        """
queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
scores = queries @ keys.transpose(-2, -1)
return softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values
""",
    ),
    ("edit", "SelfAttention_v1", ("dim=-1) @ values", "dim=-1) @ values\n\n\n%debug")),
]
