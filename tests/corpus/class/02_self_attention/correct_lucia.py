STORY = (
    "chains tensor methods (sub, exp, div, matmul) and switches gradients off on the module to copy"
)
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
m = x.amax(dim=dim, keepdim=True)
e = x.sub(m.masked_fill(m.isneginf(), 0)).exp()
s = e.sum(dim=dim, keepdim=True)
return e.div(s.masked_fill(s.eq(0), 1))
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
nt = inputs.size(0)
W = inputs.new_empty(nt, nt)
for i in range(nt):
    for j in range(nt):
        W[i, j] = inputs[i].mul(inputs[j]).sum()
W = softmax(W, dim=-1)
Z = inputs.new_zeros(inputs.shape)
for i in range(nt):
    for j in range(nt):
        Z[i].add_(W[i, j].mul(inputs[j]))
return Z, W
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
W = softmax(inputs.matmul(inputs.mT), dim=-1)
return W.matmul(inputs), W
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q = x.matmul(self.W_query)
k = x.matmul(self.W_key)
v = x.matmul(self.W_value)
return softmax(q.matmul(k.mT).div(k.size(-1) ** 0.5), dim=-1).matmul(v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = self.W_query.forward(x), self.W_key.forward(x), self.W_value.forward(x)
return softmax(q.matmul(k.mT).mul(self.W_query.out_features ** -0.5), dim=-1).matmul(v)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if any(lin.bias is not None for lin in v2.children()):
    raise ValueError("a v2 with qkv_bias=True has biases that v1 cannot hold")
v1.requires_grad_(False)
v1.W_query.copy_(v2.W_query.weight.detach().t())
v1.W_key.copy_(v2.W_key.weight.detach().t())
v1.W_value.copy_(v2.W_value.weight.detach().t())
return v1.requires_grad_(True)
""",
    ),
]
