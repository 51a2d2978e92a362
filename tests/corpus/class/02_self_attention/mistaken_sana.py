# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "NumPy habits: axis= and keepdims=, .T, np.sqrt for the scale"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "simple_attention_matrix",
    "uses inputs.T, which on a batch [batch, T, d] reverses every axis instead of swapping the last two, so batched inputs fail",
)
EDITS = [
    ("below", "setup", "import numpy as np"),
    (
        "fill",
        "softmax",
        """
mx = x.amax(axis=dim, keepdims=True)
mx = torch.where(torch.isneginf(mx), 0.0, mx)
ex = torch.exp(x - mx)
tot = ex.sum(axis=dim, keepdims=True)
return ex / torch.where(tot == 0.0, 1.0, tot)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
n_rows = len(inputs)
sc = torch.zeros((n_rows, n_rows), dtype=inputs.dtype)
for i in range(n_rows):
    for j in range(n_rows):
        sc[i, j] = (inputs[i] * inputs[j]).sum(axis=0)
wt = softmax(sc, dim=1)
res = torch.zeros_like(inputs)
for i in range(n_rows):
    for j in range(n_rows):
        res[i] = res[i] + wt[i, j] * inputs[j]
return res, wt
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
sc = inputs @ inputs.T
wt = softmax(sc, dim=-1)
return wt @ inputs, wt
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
qq = x @ self.W_query
kk = x @ self.W_key
vv = x @ self.W_value
sc = qq @ kk.swapaxes(-2, -1) / np.sqrt(kk.shape[-1])
return softmax(sc, dim=-1) @ vv
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
qq, kk, vv = self.W_query(x), self.W_key(x), self.W_value(x)
wt = softmax(qq @ kk.swapaxes(-2, -1) / np.sqrt(self.W_query.out_features), dim=-1)
return wt @ vv
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if np.any([lin.bias is not None for lin in (v2.W_query, v2.W_key, v2.W_value)]):
    raise ValueError("SelfAttention_v1 has no place for biases")
with torch.no_grad():
    for dst, lin in ((v1.W_query, v2.W_query), (v1.W_key, v2.W_key), (v1.W_value, v2.W_value)):
        dst.copy_(lin.weight.T)
return v1
""",
    ),
]
