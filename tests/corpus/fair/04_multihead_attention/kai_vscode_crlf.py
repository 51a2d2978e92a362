STORY = "VS Code on Windows (CRLF), renamed; asserts, a warning and prints inside forward"
PATTERNS = [
    "vscode-save",
    "crlf",
    "renamed-file",
    "assert-in-function",
    "warning-in-function",
    "print-in-function",
]
SAVE = {"file": "kai_mha_04_multihead_attention_final.ipynb", "editor": "vscode", "crlf": True}
EDITS = [
    ("below", "setup", "import warnings"),
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
assert x.dim() == 3, "expected [batch, T, d_in]"
outs = [head(x) for head in self.heads]
print(f"wrapper: {len(outs)} heads of width {outs[0].shape[-1]}")
return torch.cat(outs, dim=-1)
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, d_in = x.shape
assert T <= self.mask.shape[0], "sequence longer than context_length"
if self.head_dim == 1:
    warnings.warn("head_dim is 1: each head sees one feature")
q = self.W_query(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
k = self.W_key(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
v = self.W_value(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
w = self.dropout(torch.softmax(scores, dim=-1))
assert w.shape == (b, self.num_heads, T, T)
out = (w @ v).transpose(1, 2).reshape(b, T, self.d_out)
return self.out_proj(out)
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
d = 768
n = 3 * d * d + d * d + d
print("GPT-2 attention parameters:", n)
return n
""",
    ),
]
