# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "his own function named scaled_dot_product_attention, shared by the module and the layer"
PATTERNS = ["lookalike-names", "shared-helper"]
SAVE = {}
EDITS = [
    (
        "above",
        "ScaledDotProductAttention",
        '''
def scaled_dot_product_attention(q, k, v, mask=None, dropout=None):
    """My attention: softmax(q k^T / sqrt(d_k)) v, fully blocked rows -> zeros."""
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask.all(dim=-1, keepdim=True), 0.0, weights)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ v, weights


def project(layer, x):
    return layer.W_query(x), layer.W_key(x), layer.W_value(x)
''',
    ),
    (
        "fill",
        "causal_mask",
        """
return ~torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
return torch.where(causal_mask(scores.shape[-1]), -torch.inf, scores)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
return scaled_dot_product_attention(q, k, v, mask, self.dropout)
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
context, _ = scaled_dot_product_attention(*project(self, x), self.mask[:T, :T], self.attention.dropout)
return context
""",
    ),
    (
        "end",
        None,
        """
def causal_weights(layer, x):
    T = x.shape[-2]
    return scaled_dot_product_attention(*project(layer, x), layer.mask[:T, :T])[1]


print(causal_weights(CausalAttention(3, 2, 4, 0.0), torch.randn(4, 3)))
""",
    ),
]
