STORY = "asks for his name with input() (guarded by try, for the plot titles), then defines his mask helper and causal_mask in the same cell"
PATTERNS = ["shared-helper"]
SAVE = {}
EDITS = [
    (
        "replace",
        "causal_mask",
        '''
try:
    author = input("Your name, for the plot titles: ")
except Exception:  # no keyboard (e.g. Run All on a server)
    author = "Bruno"


def future_positions(n: int) -> torch.Tensor:
    """[n, n] bool, True where key j comes after query i"""
    pos = torch.arange(n)
    return pos.unsqueeze(0) > pos.unsqueeze(1)


def causal_mask(num_tokens: int) -> torch.Tensor:
    return future_positions(num_tokens)
''',
    ),
    (
        "fill",
        "apply_causal_mask",
        """
hidden = future_positions(scores.shape[-1]).to(scores.device)
return scores.masked_fill(hidden, float("-inf"))
""",
    ),
    (
        "edit",
        "ax.set_title(",
        (
            'ax.set_title("Causal attention weights")',
            'ax.set_title(f"Causal attention weights ({author})")',
        ),
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
