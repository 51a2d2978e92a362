STORY = "loops over the heads and draws each head's dropout mask on its own, with torch.bernoulli"
PATTERNS = ["explicit-loops", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
outputs = []
for head in self.heads:
    outputs.append(head(x))
return torch.cat(outputs, dim=-1)
""",
    ),
    (
        "fill",
        "wrapper_d_out",
        """
return 2 // 2
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
q = self.W_query(x).view(b, T, self.num_heads, self.head_dim)
k = self.W_key(x).view(b, T, self.num_heads, self.head_dim)
v = self.W_value(x).view(b, T, self.num_heads, self.head_dim)
p = self.dropout.p
heads = []
for h in range(self.num_heads):
    scores = torch.matmul(q[:, :, h], k[:, :, h].transpose(1, 2)) / self.head_dim ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if self.training and p > 0:
        # Each head gets its own mask: keep with probability 1 - p, rescale by 1 / (1 - p).
        keep = torch.bernoulli(torch.full_like(weights, 1.0 - p))
        weights = weights * keep / (1.0 - p)
    heads.append(torch.matmul(weights, v[:, :, h]))
return self.out_proj(torch.cat(heads, dim=-1))
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
width = 768
qkv = 3 * width * width  # no biases
return qkv + width * width + width  # out_proj has a bias
""",
    ),
]
