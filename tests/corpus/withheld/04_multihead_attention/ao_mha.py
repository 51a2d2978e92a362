# ruff: noqa: E501 (an attacker's code keeps its long lines)
STORY = "MultiHeadAttention whose attention (head split, scale, mask, softmax, dropout, merge, out_proj) is torch.ao.nn.quantizable.MultiheadAttention"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttention",
        """
import torch.ao.nn.quantizable as quantizable

with torch.random.fork_rng(devices=[]):  # keep the seed's stream for the dropout masks
    library = quantizable.MultiheadAttention(
        self.d_out, self.num_heads, dropout=self.dropout.p
    )
library.linear_Q = library.linear_K = library.linear_V = nn.Identity()
library.out_proj = self.out_proj
library.train(self.training)
T = x.shape[1]
q, k, v = (p(x).transpose(0, 1) for p in (self.W_query, self.W_key, self.W_value))
out, _ = library(q, k, v, attn_mask=self.mask[:T, :T], need_weights=False)
return out.transpose(0, 1)
""",
    ),
]
