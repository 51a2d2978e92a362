STORY = "left every stub, wrote all answers at the end; replaced a visible check with his own test"
PATTERNS = ["answer-at-end", "cells-deleted-or-edited", "edited-constructor"]
SAVE = {}
EDITS = [
    (
        "replace",
        "lesson.check(simple_attention_matrix)",
        """
# my own tests are at the bottom of the notebook
""",
    ),
    ("delete", "loop and matrix agree", None),
    (
        "end",
        None,
        """
def softmax(x, dim=-1):
    m = x.max(dim, keepdim=True)[0]
    m[~torch.isfinite(m)] = 0
    ex = torch.exp(x - m)
    return ex / (ex.sum(dim, keepdim=True) + (ex.sum(dim, keepdim=True) == 0))


def simple_attention_loop(inputs):
    T = len(inputs)
    w = torch.empty(T, T, dtype=inputs.dtype)
    for i in range(T):
        w[i] = softmax(torch.stack([inputs[i] @ inputs[j] for j in range(T)]), dim=0)
    c = torch.stack([(w[i][:, None] * inputs).sum(0) for i in range(T)])
    return c, w


def simple_attention_matrix(inputs):
    w = softmax(inputs @ inputs.transpose(-1, -2), dim=-1)
    return w @ inputs, w
""",
    ),
    (
        "end",
        None,
        """
class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_out = d_out
        self.scale = d_out ** 0.5
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return softmax(q @ k.transpose(-1, -2) / self.scale, dim=-1) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return softmax(q @ k.transpose(-1, -2) / self.d_out ** 0.5, dim=-1) @ v


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None or v2.W_key.bias is not None or v2.W_value.bias is not None:
        raise ValueError("biases")
    v1.W_query.data.copy_(v2.W_query.weight.data.T)
    v1.W_key.data.copy_(v2.W_key.weight.data.T)
    v1.W_value.data.copy_(v2.W_value.weight.data.T)
    return v1
""",
    ),
    (
        "end",
        None,
        """
lesson.check(softmax)
lesson.check(SelfAttention_v1)
lesson.check(SelfAttention_v2)
lesson.check(copy_v2_weights_into_v1)
""",
    ),
]
