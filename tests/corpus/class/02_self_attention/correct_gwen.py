# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "asserts on dtypes and shapes in every function, capital letters for matrices"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
assert torch.is_floating_point(x), f"softmax needs a float tensor, got {x.dtype}"
peak_val = x.amax(dim=dim, keepdim=True)
peak_val = peak_val.masked_fill(torch.isneginf(peak_val), 0)
expo = (x - peak_val).exp()
norm_const = expo.sum(dim=dim, keepdim=True)
norm_const = norm_const.masked_fill(norm_const == 0, 1)
res = expo / norm_const
assert res.shape == x.shape
return res
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
assert inputs.ndim == 2, "inputs must be [N, d]"
N = inputs.shape[0]
S = torch.zeros((N, N), dtype=inputs.dtype, device=inputs.device)
for i in range(N):
    for j in range(N):
        S[i, j] = torch.vdot(inputs[i], inputs[j])
W = softmax(S, dim=-1)
assert torch.allclose(W.sum(dim=-1), torch.ones(N, dtype=W.dtype))
C = torch.zeros_like(inputs)
for i in range(N):
    for j in range(N):
        C[i] = C[i] + W[i, j] * inputs[j]
return C, W
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
assert inputs.ndim >= 2, "inputs must be [..., T, d]"
S = torch.matmul(inputs, inputs.mT)
W = softmax(S, dim=-1)
C = torch.matmul(W, inputs)
assert C.shape == inputs.shape
return C, W
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
assert x.shape[-1] == self.W_query.shape[0], "the last axis of x must be d_in"
Q = x @ self.W_query
K = x @ self.W_key
V = x @ self.W_value
S = Q @ K.mT / K.shape[-1] ** 0.5
out = softmax(S, dim=-1) @ V
assert out.shape == (*x.shape[:-1], self.W_value.shape[1])
return out
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
assert x.shape[-1] == self.W_query.in_features, "the last axis of x must be d_in"
Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
S = torch.matmul(Q, K.mT) / self.W_key.out_features ** 0.5
out = torch.matmul(softmax(S, dim=-1), V)
assert out.shape[-1] == self.W_value.out_features
return out
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_value.bias is not None:
    raise ValueError("SelfAttention_v1 has no bias parameters")
assert tuple(v1.W_key.shape) == tuple(reversed(v2.W_key.weight.shape)), "v1 and v2 need the same d_in and d_out"
with torch.no_grad():
    v1.W_query.copy_(v2.W_query.weight.mT)
    v1.W_key.copy_(v2.W_key.weight.mT)
    v1.W_value.copy_(v2.W_value.weight.mT)
return v1
""",
    ),
]
