STORY = "a loop that appends each head's output; the head split with view and transpose"
PATTERNS = ["explicit-loops", "question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
outputs = []
for i in range(len(self.heads)):
    outputs.append(self.heads[i](x))
return torch.cat(outputs, dim=-1)
""",
    ),
    (
        "fill",
        "wrapper_d_out",
        """
num_heads, wanted = 2, 2
return wanted // num_heads
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
q = self.W_query(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
k = self.W_key(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
v = self.W_value(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
att = q @ k.transpose(2, 3) / self.head_dim ** 0.5  # [b, heads, T, T]?
att = att.masked_fill(self.mask.bool()[:T, :T], -torch.inf)
att = self.dropout(torch.softmax(att, dim=-1))
out = (att @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
return self.out_proj(out)
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
d = 768
qkv = 3 * d * d          # no biases (qkv_bias=False)
out = d * d + d          # out_proj has a bias
return qkv + out
""",
    ),
]
