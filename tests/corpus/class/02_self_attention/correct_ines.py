STORY = "torch.nn.functional.linear for every projection, max computed without gradient tracking"
PATTERNS = []
SAVE = {}
EDITS = [
    ("below", "setup", "import math\n\nimport torch.nn.functional as F"),
    (
        "fill",
        "softmax",
        """
with torch.no_grad():
    c = x.amax(dim=dim, keepdim=True)
    c[torch.isneginf(c)] = 0.0
e = (x - c).exp()
z = e.sum(dim=dim, keepdim=True)
z = z + z.eq(0).type_as(z)
return e / z
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
count = inputs.size(0)
att = inputs.new_zeros(count, count)
for i in range(count):
    for j in range(count):
        att[i][j] = torch.sum(torch.mul(inputs[i], inputs[j]))
att = softmax(att, dim=-1)
ctx_list = []
for i in range(count):
    weighted = torch.zeros_like(inputs[i])
    for j in range(count):
        weighted = weighted + att[i][j] * inputs[j]
    ctx_list.append(weighted)
return torch.stack(ctx_list), att
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
att = softmax(inputs @ inputs.movedim(-1, -2), dim=-1)
return att @ inputs, att
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
qs = F.linear(x, self.W_query.T)
ks = F.linear(x, self.W_key.T)
vs = F.linear(x, self.W_value.T)
return softmax(qs @ ks.movedim(-1, -2) / math.sqrt(ks.size(-1)), dim=-1) @ vs
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
qs = F.linear(x, self.W_query.weight, self.W_query.bias)
ks = F.linear(x, self.W_key.weight, self.W_key.bias)
vs = F.linear(x, self.W_value.weight, self.W_value.bias)
att = softmax(torch.matmul(qs, ks.movedim(-1, -2)) / math.sqrt(self.W_query.out_features), dim=-1)
return torch.matmul(att, vs)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if any(name.endswith("bias") for name, _ in v2.named_parameters()):
    raise ValueError("v2 has biases, v1 does not")
with torch.no_grad():
    for name, param in v1.named_parameters():
        param.copy_(v2.get_submodule(name).weight.movedim(0, 1))
return v1
""",
    ),
]
