STORY = (
    "answers in new cells under each stub; looks things up with ? and shows tensors with display()"
)
PATTERNS = ["answer-in-new-cell-below", "help-syntax", "display"]
SAVE = {}
EDITS = [
    (
        "below",
        "softmax",
        """
torch.Tensor.amax?
def softmax(x, dim=-1):
    safe_max = x.amax(dim=dim, keepdim=True).detach()
    safe_max[safe_max.isinf()] = 0.0
    unnorm = (x - safe_max).exp()
    Z = unnorm.sum(dim=dim, keepdim=True)
    return unnorm / Z.where(Z > 0, torch.ones_like(Z))

display(softmax(torch.tensor([[1.0, 2.0], [-torch.inf, -torch.inf]])))
""",
    ),
    (
        "below",
        "simple_attention_loop",
        """
def simple_attention_loop(inputs):
    n = inputs.shape[0]
    scores = torch.empty(n, n, dtype=inputs.dtype)
    for i in range(n):
        for j in range(n):
            scores[i, j] = sum(a * b for a, b in zip(inputs[i], inputs[j]))
    weights = torch.empty(n, n, dtype=inputs.dtype)
    for i in range(n):
        weights[i] = softmax(scores[i], dim=0)
    context = torch.empty_like(inputs)
    for i in range(n):
        context[i] = sum(weights[i, j] * inputs[j] for j in range(n))
    return context, weights
""",
    ),
    (
        "below",
        "simple_attention_matrix",
        """
def simple_attention_matrix(inputs):
    w = softmax(torch.einsum("...id,...jd->...ij", inputs, inputs), dim=-1)
    return w @ inputs, w

display(simple_attention_matrix(inputs)[1].sum(-1))
""",
    ),
    (
        "below",
        "SelfAttention_v1",
        """
def _v1_forward(self, x):
    queries = x @ self.W_query
    keys = x @ self.W_key
    weights = softmax(queries @ keys.transpose(-2, -1) / self.W_key.shape[1] ** 0.5, dim=-1)
    return weights @ (x @ self.W_value)

SelfAttention_v1.forward = _v1_forward
""",
    ),
    (
        "below",
        "SelfAttention_v2",
        """
class SelfAttention_v2(SelfAttention_v2):
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1) @ v
""",
    ),
    (
        "below",
        "copy_v2_weights_into_v1",
        """
def copy_v2_weights_into_v1(v2, v1):
    linears = {"W_query": v2.W_query, "W_key": v2.W_key, "W_value": v2.W_value}
    if any(l.bias is not None for l in linears.values()):
        raise ValueError("v2 has biases")
    for name, linear in linears.items():
        getattr(v1, name).data = linear.weight.data.T.clone()
    return v1
""",
    ),
]
