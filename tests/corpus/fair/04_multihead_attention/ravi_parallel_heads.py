STORY = "runs the wrapper's heads in parallel on a module-level ThreadPoolExecutor (never shut down) and checks the output shape right after"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "MultiHeadAttentionWrapper",
        """
from concurrent.futures import ThreadPoolExecutor

HEAD_POOL = ThreadPoolExecutor(max_workers=4)  # heads are independent: run them at once


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def forward(self, x):
        outputs = list(HEAD_POOL.map(lambda head: head(x), self.heads))  # map keeps the order
        return torch.cat(outputs, dim=-1)


torch.manual_seed(123)
print(MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(torch.rand(2, 6, 3)).shape)
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
