# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a .py download; split/merge helpers shared by two classes; a method named scaled_dot_product_attention"
PATTERNS = ["py-export", "block-globals", "lookalike-names", "shared-helper"]
SAVE = {"file": "lior_04_multihead_attention.py", "editor": "py"}
EDITS = [
    (
        "below",
        "setup",
        """
try:
    NEG_INF = torch.inf * -1
except AttributeError:
    NEG_INF = float("-inf")

with torch.no_grad():
    PROBE = torch.randn(2, 5, 6)


def split_heads(t, num_heads):
    b, T, d = t.shape
    return t.view(b, T, num_heads, d // num_heads).transpose(1, 2)


def merge_heads(t):
    b, h, T, hd = t.shape
    return t.transpose(1, 2).reshape(b, T, h * hd)
""",
    ),
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
return merge_heads(torch.stack([head(x) for head in self.heads], dim=1))
""",
    ),
    (
        "edit",
        "MultiHeadAttention",
        (
            """    def forward(self, x: torch.Tensor) -> torch.Tensor:""",
            '''    def scaled_dot_product_attention(self, q, k, v, T):
        """This layer's attention step, written out (not torch's function)."""
        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T], NEG_INF)
        return self.dropout(torch.softmax(scores, dim=-1)) @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:''',
        ),
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
T = x.shape[1]
q, k, v = (split_heads(p(x), self.num_heads) for p in (self.W_query, self.W_key, self.W_value))
return self.out_proj(merge_heads(self.scaled_dot_product_attention(q, k, v, T)))
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
d = 768
return 3 * d * d + d * (d + 1)
""",
    ),
    (
        "end",
        None,
        """
print(MultiHeadAttention(6, 6, 5, 0.0, 3)(PROBE).shape)
print(MultiHeadAttentionWrapper(6, 2, 5, 0.0, 3)(PROBE).shape)
""",
    ),
]
