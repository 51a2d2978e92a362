# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "Colab copy; her own heatmap colours (NaN where masked), display() of the mask"
PATTERNS = ["colab-save", "renamed-file", "magics", "display", "torch-matmul"]
SAVE = {"file": "Copy of 03_causal_attention.ipynb", "editor": "colab"}
EDITS = [
    ("below", "setup", "%matplotlib inline\n%config InlineBackend.figure_format = 'retina'"),
    (
        "fill",
        "causal_mask",
        """
return torch.triu(torch.ones((num_tokens, num_tokens), dtype=torch.bool), 1)
""",
    ),
    ("below", "lesson.check(causal_mask)", "display(causal_mask(5))"),
    (
        "fill",
        "apply_causal_mask",
        """
future = torch.ones_like(scores, dtype=torch.bool).triu(1)
return scores.masked_fill(future, -torch.inf)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
d_k = q.shape[-1]
attn = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
if mask is not None:
    attn = attn.masked_fill(mask, -torch.inf)
attn = torch.softmax(attn, dim=-1)
if mask is not None:
    attn = attn.masked_fill(torch.all(mask, dim=-1, keepdim=True), 0.0)
attn = self.dropout(attn)
return torch.matmul(attn, v), attn
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
b_T = x.shape[-2]
q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
return self.attention(q, k, v, mask=self.mask[:b_T, :b_T])[0]
""",
    ),
    (
        "edit",
        "Causal attention weights",
        (
            "image = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0)",
            'image = ax.imshow(weights[0].detach().masked_fill(layer.mask, float("nan")), cmap="magma")',
        ),
    ),
]
