STORY = "measures training steps per second for five model widths (8 s each) in the diagonal_score cell, defines it below the loop, then the other scores in his own style"
PATTERNS = ["block-globals"]
SAVE = {}
EDITS = [
    (
        "replace",
        "diagonal_score",
        """
import time

speed = {}
for width in (16, 32, 64, 128, 256):
    m = TinyTransformer(VOCAB_SIZE, width, CONTEXT, num_heads=2, num_layers=2)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < 8:
        b = repeated_segments(32, generator, VOCAB_SIZE, CONTEXT + 1)
        train_step(m, opt, b[:, :-1], b[:, 1:])
        steps += 1
    speed[width] = steps / (time.perf_counter() - start)
    print(f"d_model={width:4d}: {speed[width]:6.1f} steps/s")


def diagonal_score(weights: torch.Tensor, offset: int) -> torch.Tensor:
    T = weights.shape[-1]
    queries = torch.arange(offset, T)
    return weights[..., queries, queries - offset].mean(dim=-1)
""",
    ),
    (
        "fill",
        "first_token_score",
        """
T = weights.shape[-2]
return weights[..., 1:, 0].sum(dim=-1) / (T - 1)
""",
    ),
    (
        "fill",
        "induction_score",
        """
T = weights.shape[-1]
queries = torch.arange(period, T)
return weights[..., queries, queries - period + 1].mean(dim=-1)
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
