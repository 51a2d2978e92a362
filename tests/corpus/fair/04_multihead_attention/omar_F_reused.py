STORY = "VS Code: his fused layer drops out with F.dropout; in a plotting cell at the end he names the figure F"
PATTERNS = ["vscode-save", "crlf", "question-comment"]
SAVE = {"editor": "vscode", "crlf": True}
EDITS = [
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
shape = (b, T, self.num_heads, self.head_dim)
q = self.W_query(x).view(shape).permute(0, 2, 1, 3)
k = self.W_key(x).view(shape).permute(0, 2, 1, 3)
v = self.W_value(x).view(shape).permute(0, 2, 1, 3)
s = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5
w = F.softmax(s.masked_fill(self.mask[:T, :T], float("-inf")), dim=-1)
w = F.dropout(w, p=self.dropout.p, training=self.training)
out = (w @ v).permute(0, 2, 1, 3).reshape(b, T, self.d_out)
return self.out_proj(out)
""",
    ),
    (
        "end",
        None,
        """
import matplotlib.pyplot as plt

# what does each output feature look like over the tokens?
torch.manual_seed(0)
layer = MultiHeadAttention(6, 8, 10, 0.0, num_heads=2).eval()
with torch.no_grad():
    feats = layer(torch.randn(1, 10, 6))[0]
F = plt.figure(figsize=(6, 3))
plt.plot(feats.numpy())
plt.xlabel("token")
plt.show()
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
