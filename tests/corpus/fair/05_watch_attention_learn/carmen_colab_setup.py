STORY = "Colab: a setup cell of !nvidia-smi, %pip, %load_ext autoreload and %autoreload 2, then her head helpers, which her layer uses"
PATTERNS = ["colab-save", "renamed-file", "magics"]
SAVE = {"file": "05_watch_attention_learn (Carmen).ipynb", "editor": "colab"}
EDITS = [
    (
        "above",
        "MultiHeadAttention",
        '''
!nvidia-smi
%pip install -q tqdm
%load_ext autoreload
%autoreload 2


def to_heads(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    b, T, d = t.shape
    return t.unflatten(-1, (num_heads, d // num_heads)).transpose(1, 2)


def from_heads(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2).flatten(-2)


def zero_empty_rows(weights: torch.Tensor) -> torch.Tensor:
    """rows that were all -inf come out of softmax as NaN: make them 0"""
    return torch.nan_to_num(weights, nan=0.0)
''',
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
T = x.shape[1]
q = to_heads(self.W_query(x), self.num_heads)
k = to_heads(self.W_key(x), self.num_heads)
v = to_heads(self.W_value(x), self.num_heads)
blocked = self.mask[:T, :T] if padding is None else (self.mask[:T, :T] | padding)
scores = (q @ k.transpose(-2, -1)).div(self.head_dim ** 0.5).masked_fill(blocked, -torch.inf)
weights = zero_empty_rows(torch.softmax(scores, dim=-1))
self.last_weights = weights.detach().clone()
return self.out_proj(from_heads(self.dropout(weights) @ v))
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
pos = torch.arange(num_tokens)
first_real = (num_tokens - lengths).view(-1, 1, 1, 1)  # [batch, 1, 1, 1]
future = pos.view(1, 1, -1) > pos.view(1, -1, 1)      # [1, T, T]
pad = pos.view(1, 1, 1, -1) < first_real               # [batch, 1, 1, T]
return future.unsqueeze(0) | pad
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
T = ids.shape[1]
h = self.token_embedding(ids) + self.position_embedding.weight[:T]
for block in self.blocks:
    h = h + block(h, padding=padding)
return self.head(h)
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
