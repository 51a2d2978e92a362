STORY = "answers in new cells under each stub; math's star import; reads help with ?"
PATTERNS = ["answer-in-new-cell-below", "help-syntax", "star-import"]
SAVE = {}
EDITS = [
    ("below", "setup", "from math import *\nnn.ModuleList?"),
    (
        "below",
        "MultiHeadAttentionWrapper",
        """
def _wrapper_forward(self, x):
    return torch.cat([self.heads[i](x) for i in range(len(self.heads))], dim=2)

MultiHeadAttentionWrapper.forward = _wrapper_forward
""",
    ),
    (
        "below",
        "wrapper_d_out",
        """
def wrapper_d_out():
    return floor(2 / 2)
""",
    ),
    (
        "below",
        "MultiHeadAttention",
        """
def _mha_forward(self, x):
    batch, tokens, _ = x.shape
    shape = (batch, tokens, self.num_heads, self.head_dim)
    q = self.W_query(x).reshape(shape).permute(0, 2, 1, 3)
    k = self.W_key(x).reshape(shape).permute(0, 2, 1, 3)
    v = self.W_value(x).reshape(shape).permute(0, 2, 1, 3)
    scores = q @ k.permute(0, 1, 3, 2) / sqrt(self.head_dim)
    scores = scores.masked_fill(self.mask[:tokens, :tokens], -inf)
    weights = self.dropout(torch.softmax(scores, dim=-1))
    merged = (weights @ v).permute(0, 2, 1, 3).reshape(batch, tokens, self.d_out)
    return self.out_proj(merged)

MultiHeadAttention.forward = _mha_forward
""",
    ),
    (
        "below",
        "gpt2_attention_parameters",
        """
def gpt2_attention_parameters():
    d = 768
    return int(pow(d, 2) * 4 + d)
""",
    ),
]
