# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a method called scaled_dot_product_attention and a helper that imports his own softmax"
PATTERNS = ["lookalike-names", "imports-own-softmax", "shared-helper"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
shift = x.amax(dim=dim, keepdim=True)
shift = shift.masked_fill(shift == float("-inf"), 0.0)
num = torch.exp(x - shift)
den = num.sum(dim=dim, keepdim=True)
return num / den.masked_fill(den == 0, 1.0)
""",
    ),
    (
        "above",
        "simple_attention_loop",
        '''
def scaled_dot_product_attention(q, k, v, scale=None):
    """My own version of the formula (not torch's): softmax(q k^T / scale) v."""
    from __main__ import softmax as my_softmax

    scores = q @ k.transpose(-2, -1)
    if scale is not None:
        scores = scores / scale
    weights = my_softmax(scores, dim=-1)
    return weights @ v, weights
''',
    ),
    (
        "fill",
        "simple_attention_loop",
        """
n = len(inputs)
weights = torch.stack([softmax(torch.stack([inputs[i] @ inputs[j] for j in range(n)]), dim=0) for i in range(n)])
context = torch.stack([sum(weights[i, j] * inputs[j] for j in range(n)) for i in range(n)])
return context, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
return scaled_dot_product_attention(inputs, inputs, inputs)
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
context, _ = scaled_dot_product_attention(
    x @ self.W_query, x @ self.W_key, x @ self.W_value, scale=self.W_key.shape[-1] ** 0.5
)
return context
""",
    ),
    (
        "edit",
        "SelfAttention_v2",
        (
            """    def forward(self, x: torch.Tensor) -> torch.Tensor:""",
            '''    def scaled_dot_product_attention(self, q, k, v):
        """The attention step of this layer (my own, no library call)."""
        weights = softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
        return weights @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:''',
        ),
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
return self.scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
pairs = [(v1.W_query, v2.W_query), (v1.W_key, v2.W_key), (v1.W_value, v2.W_value)]
for _, linear in pairs:
    if linear.bias is not None:
        raise ValueError("v2 has biases; v1 cannot hold them")
with torch.no_grad():
    for param, linear in pairs:
        param[:] = linear.weight.T
return v1
""",
    ),
]
