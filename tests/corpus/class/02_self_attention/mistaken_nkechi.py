# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "long explicit names, numpy-style axis= and keepdims=, .mT for transposes"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "softmax",
    "always normalises over the last axis and ignores the dim argument, so softmax along any other dim is wrong",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
row_max = x.max(axis=-1, keepdims=True).values
row_max = torch.nan_to_num(row_max, neginf=0.0)
exponentiated = torch.exp(x - row_max)
row_sums = exponentiated.sum(axis=-1, keepdims=True)
return exponentiated / row_sums.masked_fill(row_sums == 0, 1.0)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
number_of_tokens = inputs.shape[0]
score_matrix = torch.zeros(number_of_tokens, number_of_tokens, dtype=inputs.dtype)
for query_position in range(number_of_tokens):
    for key_position in range(number_of_tokens):
        score_matrix[query_position, key_position] = torch.linalg.vecdot(inputs[query_position], inputs[key_position])
weight_matrix = softmax(score_matrix, dim=-1)
context_matrix = torch.zeros_like(inputs)
for query_position in range(number_of_tokens):
    for key_position in range(number_of_tokens):
        context_matrix[query_position] += weight_matrix[query_position, key_position] * inputs[key_position]
return context_matrix, weight_matrix
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
score_matrix = inputs @ inputs.mT
weight_matrix = softmax(score_matrix, dim=-1)
return weight_matrix @ inputs, weight_matrix
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
query_vectors = x @ self.W_query
key_vectors = x @ self.W_key
value_vectors = x @ self.W_value
key_dimension = self.W_key.shape[1]
score_matrix = query_vectors @ key_vectors.mT / key_dimension ** 0.5
return softmax(score_matrix, dim=-1) @ value_vectors
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
projected = {name: getattr(self, name)(x) for name in ("W_query", "W_key", "W_value")}
score_matrix = projected["W_query"] @ projected["W_key"].mT
weight_matrix = softmax(score_matrix / projected["W_key"].shape[-1] ** 0.5, dim=-1)
return weight_matrix @ projected["W_value"]
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
for projection_name in ("W_query", "W_key", "W_value"):
    linear_layer = getattr(v2, projection_name)
    if getattr(linear_layer, "bias", None) is not None:
        raise ValueError(f"{projection_name} of v2 has a bias; SelfAttention_v1 cannot store it")
    getattr(v1, projection_name).detach().copy_(linear_layer.weight.detach().mT)
return v1
""",
    ),
]
