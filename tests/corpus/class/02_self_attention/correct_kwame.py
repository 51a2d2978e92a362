STORY = "comprehensions and one-liners, swapaxes for transposes, clip instead of clamp"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
top = torch.amax(x, dim, keepdim=True).clip(min=torch.finfo(x.dtype).min)
ex = torch.exp(torch.sub(x, top))
return ex / torch.sum(ex, dim, keepdim=True).clip(min=torch.finfo(x.dtype).eps)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
from functools import reduce

idx = range(inputs.shape[0])
raw = torch.stack([torch.stack([torch.dot(inputs[i], inputs[j]) for j in idx]) for i in idx])
att = softmax(raw, dim=-1)
ctx = torch.stack([reduce(torch.add, (att[i, j] * inputs[j] for j in idx)) for i in idx])
return ctx, att
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
att_m = softmax(inputs @ inputs.swapaxes(-1, -2), dim=-1)
return att_m @ inputs, att_m
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q, k, v = [x @ w for w in (self.W_query, self.W_key, self.W_value)]
return softmax(q @ k.swapaxes(-1, -2) / k.shape[-1] ** 0.5, dim=-1) @ v
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = [layer(x) for layer in (self.W_query, self.W_key, self.W_value)]
scale = self.W_key.out_features ** -0.5
return softmax(q @ k.swapaxes(-1, -2) * scale, dim=-1) @ v
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if [lin for lin in (v2.W_query, v2.W_key, v2.W_value) if lin.bias is not None]:
    raise ValueError("v2 was built with biases (qkv_bias=True)")
with torch.no_grad():
    for p, lin in zip([v1.W_query, v1.W_key, v1.W_value], [v2.W_query, v2.W_key, v2.W_value]):
        p.copy_(lin.weight.swapaxes(0, 1))
return v1
""",
    ),
]
