STORY = "loops over the batch and over tokens; keeps the input's dtype and device everywhere"
PATTERNS = ["explicit-loops", "float32-contract", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
moved = x.movedim(dim, -1)
flat = moved.reshape(-1, moved.shape[-1])
rows = []
for r in range(flat.shape[0]):
    row = flat[r]
    if torch.isneginf(row).all():
        rows.append(torch.zeros_like(row))
        continue
    e = torch.exp(row - row.max())
    rows.append(e / e.sum())
out = torch.stack(rows).reshape(moved.shape) if rows else flat.reshape(moved.shape)
return out.movedim(-1, dim).to(x.dtype)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
T = inputs.shape[0]
context = torch.zeros(T, inputs.shape[1], dtype=inputs.dtype, device=inputs.device)
weights = torch.zeros(T, T, dtype=inputs.dtype, device=inputs.device)
for i in range(T):
    scores = torch.zeros(T, dtype=inputs.dtype)
    for j in range(T):
        scores[j] = torch.dot(inputs[i], inputs[j])
    weights[i] = softmax(scores, dim=0)
    for j in range(T):
        context[i] += weights[i, j] * inputs[j]
return context, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
if inputs.dim() > 2:
    pairs = [simple_attention_matrix(seq) for seq in inputs]
    return torch.stack([c for c, _ in pairs]), torch.stack([w for _, w in pairs])
w = softmax(torch.mm(inputs, inputs.t()), dim=-1)
return torch.mm(w, inputs), w
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
if x.dim() == 3:
    return torch.stack([self.forward(sequence) for sequence in x])
q, k, v = torch.mm(x, self.W_query), torch.mm(x, self.W_key), torch.mm(x, self.W_value)
return torch.mm(softmax(torch.mm(q, k.t()) / k.shape[1] ** 0.5, dim=1), v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
w = softmax(torch.matmul(q, k.transpose(-2, -1)) / k.shape[-1] ** 0.5, dim=-1)
return torch.matmul(w, v)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
names = ["W_query", "W_key", "W_value"]
for name in names:
    if getattr(v2, name).bias is not None:
        raise ValueError("SelfAttention_v1 has no bias to copy into")
for name in names:
    with torch.no_grad():
        getattr(v1, name).copy_(getattr(v2, name).weight.t())
return v1
""",
    ),
]
