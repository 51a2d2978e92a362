STORY = (
    "softmax in float64 then cast back, unsqueeze instead of keepdim, the three projections stacked"
)
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
wide = x.to(torch.float64)
peak = wide.max(dim=dim).values.clamp_min(-1e300).unsqueeze(dim)
powers = torch.exp(wide - peak)
total = powers.sum(dim=dim).unsqueeze(dim)
probs = powers / total.clamp_min(1e-300)
return probs.to(x.dtype)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
seq_len = inputs.size(dim=0)
dot_table = torch.zeros(seq_len, seq_len, dtype=inputs.dtype)
for qi in range(seq_len):
    for ki in range(seq_len):
        dot_table[qi, ki] = torch.mm(inputs[qi].unsqueeze(0), inputs[ki].unsqueeze(1)).squeeze()
attn = softmax(dot_table, dim=1)
blended = torch.zeros_like(inputs)
for qi in range(seq_len):
    for ki in range(seq_len):
        blended[qi] += attn[qi, ki].unsqueeze(0) * inputs[ki]
return blended, attn
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
dot_table = torch.matmul(inputs, inputs.transpose(-1, -2))
attn = softmax(dot_table, dim=dot_table.ndim - 1)
return torch.matmul(attn, inputs), attn
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
proj = torch.stack([self.W_query, self.W_key, self.W_value])
q, k, v = torch.matmul(x.unsqueeze(-3), proj).unbind(-3)
raw = torch.matmul(q, k.transpose(-1, -2))
attn = softmax(raw / float(k.shape[-1]) ** 0.5, dim=-1)
return torch.matmul(attn, v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
qkv = torch.stack([self.W_query(x), self.W_key(x), self.W_value(x)])
q, k, v = qkv.unbind(0)
attn = softmax(torch.matmul(q, k.transpose(-1, -2)) / float(self.W_key.out_features) ** 0.5, dim=-1)
return torch.matmul(attn, v)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
has_bias = [lin.bias is not None for lin in (v2.W_query, v2.W_key, v2.W_value)]
if True in has_bias:
    raise ValueError("v1 cannot take the biases of a v2 built with qkv_bias=True")
with torch.no_grad():
    v1.W_query.copy_(v2.W_query.weight.permute(1, 0))
    v1.W_key.copy_(v2.W_key.weight.permute(1, 0))
    v1.W_value.copy_(v2.W_value.weight.permute(1, 0))
return v1
""",
    ),
]
