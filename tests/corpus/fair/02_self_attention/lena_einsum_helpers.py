# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "einsum, and one attend() helper shared by the matrix version, v1 and v2"
PATTERNS = ["einsum", "shared-helper", "question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
m = x.detach().amax(dim=dim, keepdim=True).nan_to_num(neginf=0.0, posinf=0.0)
e = (x - m).exp()
s = e.sum(dim=dim, keepdim=True)
return e / s.clamp_min(torch.finfo(x.dtype).tiny)
""",
    ),
    (
        "above",
        "simple_attention_loop",
        '''
def attend(q, k, v, scale=1.0):
    """softmax(q k^T * scale) v for any leading axes -> (context, weights)"""
    w = softmax(torch.einsum("...id,...jd->...ij", q, k) * scale, dim=-1)
    return torch.einsum("...ij,...jd->...id", w, v), w
''',
    ),
    (
        "fill",
        "simple_attention_loop",
        """
rows = []
for i in range(inputs.shape[0]):
    rows.append(torch.stack([torch.einsum("d,d->", inputs[i], inputs[j]) for j in range(inputs.shape[0])]))
weights = softmax(torch.stack(rows), dim=-1)
context = torch.stack([torch.einsum("j,jd->d", weights[i], inputs) for i in range(inputs.shape[0])])
return context, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
return attend(inputs, inputs, inputs)
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
d_out = self.W_key.shape[1]  # scale by the key width?
q, k, v = (torch.einsum("...td,de->...te", x, W) for W in (self.W_query, self.W_key, self.W_value))
context, _ = attend(q, k, v, scale=d_out ** -0.5)
return context
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
context, _ = attend(self.W_query(x), self.W_key(x), self.W_value(x), scale=self.W_key.out_features ** -0.5)
return context
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_query.bias is not None or v2.W_key.bias is not None or v2.W_value.bias is not None:
    raise ValueError("cannot copy biases into SelfAttention_v1")
for name in ("W_query", "W_key", "W_value"):
    getattr(v1, name).data = getattr(v2, name).weight.detach().t().clone()
return v1
""",
    ),
]
