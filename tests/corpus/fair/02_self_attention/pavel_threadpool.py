STORY = "runs his loop version on sentences of several lengths in a ThreadPoolExecutor he never shuts down, in the cell that defines the matrix version"
PATTERNS = ["explicit-loops", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "simple_attention_loop",
        """
n = inputs.shape[0]
w = torch.empty(n, n, dtype=inputs.dtype)
for i in range(n):
    row = torch.stack([torch.dot(inputs[i], inputs[j]) for j in range(n)])
    w[i] = softmax(row, dim=0)
ctx = torch.stack([sum(w[i, j] * inputs[j] for j in range(n)) for i in range(n)])
return ctx, w
""",
    ),
    (
        "replace",
        "simple_attention_matrix",
        '''
from concurrent.futures import ThreadPoolExecutor

# the loop version is slow: run a few sentence lengths at once
pool = ThreadPoolExecutor(max_workers=3)
sentences = [torch.rand(T, 3) for T in (3, 6, 9, 12)]
jobs = {s.shape[0]: pool.submit(simple_attention_loop, s) for s in sentences}
for T, job in jobs.items():
    ctx, w = job.result()
    print(T, tuple(ctx.shape), "rows sum to 1:", bool(torch.allclose(w.sum(-1), torch.ones(T))))


def simple_attention_matrix(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Same as the loop version, batched."""
    scores = torch.matmul(inputs, inputs.transpose(-1, -2))
    weights = softmax(scores, dim=-1)
    return torch.matmul(weights, inputs), weights
''',
    ),
    (
        "below",
        "test_simple_attention_matrix",
        """
checks = [pool.submit(simple_attention_matrix, s) for s in sentences]
print([torch.allclose(c.result()[0], jobs[s.shape[0]].result()[0], atol=1e-6) for c, s in zip(checks, sentences)])
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
