# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "every answer in one cell at the very end; removed the demo cells he found noisy"
PATTERNS = ["answer-at-end", "cells-deleted-or-edited", "edited-constructor"]
SAVE = {}
EDITS = [
    ("delete", "the two ways agree", None),
    ("delete", "Causal attention weights", None),
    (
        "end",
        None,
        """
def causal_mask(num_tokens):
    m = torch.zeros(num_tokens, num_tokens, dtype=torch.bool)
    m[torch.triu_indices(num_tokens, num_tokens, offset=1).unbind()] = True
    return m


def apply_causal_mask(scores):
    return scores + torch.zeros_like(scores).masked_fill(causal_mask(scores.shape[-1]), float("-inf"))


class ScaledDotProductAttention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.p = dropout
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        s = (q @ k.mT) / (k.shape[-1] ** 0.5)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        w = torch.softmax(s, -1).nan_to_num(0.0)
        w = self.dropout(w)
        return w @ v, w


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attention = ScaledDotProductAttention(dropout)
        self.register_buffer("mask", causal_mask(context_length), persistent=False)

    def forward(self, x):
        t = x.shape[-2]
        return self.attention(self.W_query(x), self.W_key(x), self.W_value(x), self.mask[:t, :t])[0]
""",
    ),
]
