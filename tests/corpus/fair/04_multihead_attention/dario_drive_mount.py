STORY = "his first cell after the setup pip-installs, tries to mount Google Drive (guarded), then defines the head-split helpers his layers use"
PATTERNS = ["magics"]
SAVE = {}
EDITS = [
    (
        "below",
        "setup",
        '''
!pip install -q "torch>=2.4"
try:
    from google.colab import drive

    drive.mount("/content/drive")
    IN_COLAB = True
except ImportError:
    IN_COLAB = False


def split_heads(t, num_heads):
    """[b, T, heads * d] -> [b, heads, T, d]"""
    b, T, width = t.shape
    return t.reshape(b, T, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(t):
    """[b, heads, T, d] -> [b, T, heads * d]"""
    b, h, T, d = t.shape
    return t.transpose(1, 2).reshape(b, T, h * d)
''',
    ),
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
stacked = torch.stack([head(x) for head in self.heads], dim=1)  # [b, heads, T, d_out]
return merge_heads(stacked)
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
T = x.shape[1]
q = split_heads(self.W_query(x), self.num_heads)
k = split_heads(self.W_key(x), self.num_heads)
v = split_heads(self.W_value(x), self.num_heads)
scores = (q @ k.transpose(-1, -2)) / (self.head_dim ** 0.5)
scores = scores.masked_fill(self.mask[:T, :T], -torch.inf)
weights = self.dropout(scores.softmax(-1))
return self.out_proj(merge_heads(weights @ v))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
