# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "folds every leading axis into one batch axis and uses torch.bmm, with two small helpers"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
dead = torch.isneginf(x).all(dim=dim, keepdim=True)
safe = x.masked_fill(dead, 0.0)
safe = safe - safe.amax(dim=dim, keepdim=True)
p = torch.exp(safe)
p = p / p.sum(dim=dim, keepdim=True)
return p.masked_fill(dead, 0.0)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
T, d = inputs.shape
scores = torch.zeros(T, T, dtype=inputs.dtype)
for q in range(T):
    for k in range(T):
        scores[q, k] = torch.sum(inputs[q] * inputs[k])
attn = softmax(scores, dim=1)
ctx = torch.zeros(T, d, dtype=inputs.dtype)
for q in range(T):
    for k in range(T):
        ctx[q] += attn[q, k] * inputs[k]
return ctx, attn
""",
    ),
    (
        "above",
        "simple_attention_matrix",
        '''
def fold(t: torch.Tensor) -> tuple[torch.Tensor, torch.Size]:
    """[..., T, d] -> ([B, T, d], the leading shape that was folded into B)."""
    return t.reshape(-1, *t.shape[-2:]), t.shape[:-2]


def unfold(t: torch.Tensor, lead: torch.Size) -> torch.Tensor:
    """[B, T, d] -> [..., T, d] with the leading shape put back."""
    return t.reshape(*lead, *t.shape[1:])
''',
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
flat, lead = fold(inputs)
attn = softmax(torch.bmm(flat, flat.transpose(1, 2)), dim=2)
return unfold(torch.bmm(attn, flat), lead), unfold(attn, lead)
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
xb, lead = fold(x)
B = xb.shape[0]
Q = torch.bmm(xb, self.W_query.expand(B, -1, -1))
K = torch.bmm(xb, self.W_key.expand(B, -1, -1))
V = torch.bmm(xb, self.W_value.expand(B, -1, -1))
A = softmax(torch.bmm(Q, K.transpose(1, 2)) / K.shape[2] ** 0.5, dim=2)
return unfold(torch.bmm(A, V), lead)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
xb, lead = fold(x)
Qb, Kb, Vb = self.W_query(xb), self.W_key(xb), self.W_value(xb)
Ab = softmax(torch.bmm(Qb, Kb.transpose(1, 2)) * Kb.shape[2] ** -0.5, dim=2)
return unfold(torch.bmm(Ab, Vb), lead)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
for layer in (v2.W_query, v2.W_key, v2.W_value):
    if "bias" in dict(layer.named_parameters()):
        raise ValueError("v2 has biases and SelfAttention_v1 has none")
with torch.no_grad():
    for target, layer in zip((v1.W_query, v1.W_key, v1.W_value), (v2.W_query, v2.W_key, v2.W_value)):
        target.copy_(layer.weight.t())
return v1
""",
    ),
]
