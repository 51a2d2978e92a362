STORY = "a permutation list for the transpose, Xq/Xk/Xv names, where() for empty slices"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "SelfAttention_v2",
    "computes the context vectors but returns the attention weights instead",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
hi = x.amax(dim=dim, keepdim=True).detach()
hi = hi.masked_fill(hi == -float("inf"), 0.0)
w = torch.exp(x - hi)
w_sum = w.sum(dim=dim, keepdim=True)
return torch.where(w_sum == 0, w, w / w_sum.clamp_min(1e-30))
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
count_t, width = inputs.shape
raw = inputs.new_zeros(count_t, count_t)
for a in range(count_t):
    for b in range(count_t):
        raw[a, b] = (inputs[a] * inputs[b]).sum(-1)
probs = softmax(raw, dim=-1)
context = inputs.new_zeros(count_t, width)
for a in range(count_t):
    for b in range(count_t):
        context[a] = context[a] + probs[a, b] * inputs[b]
return context, probs
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
perm = list(range(inputs.dim()))
perm[-2], perm[-1] = perm[-1], perm[-2]
raw = inputs @ inputs.permute(*perm)
soft = softmax(raw, dim=-1)
return soft @ inputs, soft
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
d_out = self.W_query.shape[1]
Xq, Xk, Xv = x @ self.W_query, x @ self.W_key, x @ self.W_value
raw = Xq @ Xk.transpose(-2, -1) * (1.0 / d_out) ** 0.5
return softmax(raw, dim=-1) @ Xv
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
Xq = self.W_query(x)
Xk = self.W_key(x)
Xv = self.W_value(x)
probs = softmax(Xq @ Xk.transpose(-2, -1) / Xk.shape[-1] ** 0.5, dim=-1)
context = probs @ Xv
return probs
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
for lin in (v2.W_query, v2.W_key, v2.W_value):
    if lin.bias is not None:
        raise ValueError("v2 has biases; the copy only works with qkv_bias=False")
v1.W_query.data[:] = v2.W_query.weight.data.T
v1.W_key.data[:] = v2.W_key.weight.data.T
v1.W_value.data[:] = v2.W_value.weight.data.T
return v1
""",
    ),
]
