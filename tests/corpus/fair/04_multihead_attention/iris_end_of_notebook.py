# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "left the stubs, wrote a clean version of every class at the end; rewrote a check cell"
PATTERNS = ["answer-at-end", "cells-deleted-or-edited", "edited-constructor"]
SAVE = {}
EDITS = [
    ("delete", "agrees with F.scaled_dot_product_attention", None),
    (
        "replace",
        "lesson.check(wrapper_d_out)",
        "# 2 heads x d_out = 2 features -> d_out = 1 (see the end)",
    ),
    (
        "end",
        None,
        """
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat(tuple(h(x) for h in self.heads), -1)


def wrapper_d_out():
    return 1


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        head_dim, remainder = divmod(d_out, num_heads)
        if remainder:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, head_dim
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1).bool())

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (
            p(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
            for p in (self.W_query, self.W_key, self.W_value)
        )
        s = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5
        s = s.masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(s.softmax(-1))
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, self.d_out))


def gpt2_attention_parameters():
    return 2_360_064
""",
    ),
    (
        "end",
        None,
        """
for exercise in (MultiHeadAttentionWrapper, wrapper_d_out, MultiHeadAttention, gpt2_attention_parameters):
    lesson.check(exercise)
""",
    ),
]
