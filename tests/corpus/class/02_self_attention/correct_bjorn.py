STORY = "torch.einsum for every product, one-letter names, no comments"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
m = torch.max(x, dim, keepdim=True)[0].clamp(min=torch.finfo(x.dtype).min)
e = (x - m).exp()
s = torch.sum(e, dim, keepdim=True)
return e / torch.where(s > 0, s, 1.0)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
n = inputs.size(0)
a = torch.empty(n, n, dtype=inputs.dtype)
for i in range(n):
    for j in range(n):
        a[i, j] = torch.inner(inputs[i], inputs[j])
w = softmax(a, -1)
c = torch.empty_like(inputs)
for i in range(n):
    r = torch.zeros_like(inputs[i])
    for j in range(n):
        r += w[i, j] * inputs[j]
    c[i] = r
return c, w
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
w = softmax(torch.einsum("...qd,...kd->...qk", inputs, inputs), -1)
return torch.einsum("...qk,...kd->...qd", w, inputs), w
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q = torch.einsum("...ti,io->...to", x, self.W_query)
k = torch.einsum("...ti,io->...to", x, self.W_key)
v = torch.einsum("...ti,io->...to", x, self.W_value)
a = softmax(torch.einsum("...so,...to->...st", q, k) / k.shape[-1] ** .5, -1)
return torch.einsum("...st,...to->...so", a, v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = map(lambda f: f(x), (self.W_query, self.W_key, self.W_value))
a = softmax(torch.einsum("...ie,...je->...ij", q, k) * k.shape[-1] ** -.5, -1)
return torch.einsum("...ij,...je->...ie", a, v)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_key.bias is not None:
    raise ValueError("bias")
v1.W_query.data.copy_(torch.einsum("oi->io", v2.W_query.weight.data))
v1.W_key.data.copy_(torch.einsum("oi->io", v2.W_key.weight.data))
v1.W_value.data.copy_(torch.einsum("oi->io", v2.W_value.weight.data))
return v1
""",
    ),
]
