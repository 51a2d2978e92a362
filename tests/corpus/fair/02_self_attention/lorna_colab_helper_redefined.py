STORY = "Colab: both attention classes call her helper scaled_scores; at the end she redefines it with a temperature to play with sharper weights"
PATTERNS = ["colab-save", "renamed-file", "shared-helper", "question-comment"]
SAVE = {"file": "02_self_attention - Lorna.ipynb", "editor": "colab"}
EDITS = [
    (
        "above",
        "SelfAttention_v1",
        '''
def scaled_scores(queries, keys):
    """q k^T / sqrt(d_k), for any batch axes"""
    return queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
''',
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
weights = softmax(scaled_scores(x @ self.W_query, x @ self.W_key), dim=-1)
return weights @ (x @ self.W_value)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
weights = softmax(scaled_scores(self.W_query(x), self.W_key(x)), dim=-1)
return weights @ self.W_value(x)
""",
    ),
    (
        "end",
        None,
        """
# playing: what if I divide by a temperature too? sharper weights?
def scaled_scores(queries, keys, temperature=0.25):
    return queries @ keys.transpose(-2, -1) / (keys.shape[-1] ** 0.5 * temperature)


torch.manual_seed(123)
print(SelfAttention_v1(3, 2)(inputs))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
