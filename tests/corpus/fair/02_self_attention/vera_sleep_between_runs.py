STORY = "times the loop version with a cool-down time.sleep between sizes (about 45 s), then defines the matrix version under the loop and times it in a later cell"
PATTERNS = ["block-globals", "einsum"]
SAVE = {}
EDITS = [
    (
        "replace",
        "simple_attention_matrix",
        """
import time

loop_times = {}
for T in (4, 8, 16, 32, 64):
    x = torch.rand(T, 16)
    start = time.perf_counter()
    for _ in range(3):
        simple_attention_loop(x)
    loop_times[T] = (time.perf_counter() - start) / 3
    print(f"loop version, T={T}: {loop_times[T] * 1000:.1f} ms")
    time.sleep(9)  # let the laptop cool down so the numbers are comparable


def simple_attention_matrix(inputs):
    weights = softmax(torch.einsum("...id,...jd->...ij", inputs, inputs), dim=-1)
    context = torch.einsum("...ij,...jd->...id", weights, inputs)
    return context, weights
""",
    ),
    (
        "below",
        "test_simple_attention_matrix",
        """
for T in loop_times:
    x = torch.rand(T, 16)
    start = time.perf_counter()
    for _ in range(3):
        simple_attention_matrix(x)
    print(f"T={T}: matrix is {loop_times[T] / ((time.perf_counter() - start) / 3):.0f}x faster")
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q = self.W_query(x)
k = self.W_key(x)
v = self.W_value(x)
w = softmax(torch.einsum("...qd,...kd->...qk", q, k) / k.shape[-1] ** 0.5, dim=-1)
return torch.einsum("...qk,...kd->...qd", w, v)
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
