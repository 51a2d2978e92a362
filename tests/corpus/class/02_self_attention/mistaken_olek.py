# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "torch functions with keyword arguments everywhere, itertools.product for the pairs"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "softmax",
    "subtracts the maximum without guarding a slice that is all -inf, so -inf minus -inf gives nan there instead of zeros",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
shifted = torch.sub(input=x, other=torch.amax(input=x, dim=dim, keepdim=True))
numerator = torch.exp(input=shifted)
return torch.div(input=numerator, other=torch.sum(input=numerator, dim=dim, keepdim=True))
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
from itertools import product

tokens = inputs.shape[0]
pair_scores = torch.zeros(size=(tokens, tokens), dtype=inputs.dtype)
for i, j in product(range(tokens), range(tokens)):
    pair_scores[i, j] = torch.mul(input=inputs[i], other=inputs[j]).sum()
pair_weights = softmax(pair_scores, dim=1)
mixed = torch.zeros(size=inputs.shape, dtype=inputs.dtype)
for i, j in product(range(tokens), range(tokens)):
    mixed[i] = torch.add(input=mixed[i], other=torch.mul(input=inputs[j], other=pair_weights[i, j]))
return mixed, pair_weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
pair_scores = torch.matmul(input=inputs, other=torch.transpose(input=inputs, dim0=-2, dim1=-1))
pair_weights = softmax(pair_scores, dim=-1)
return torch.matmul(input=pair_weights, other=inputs), pair_weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q = torch.matmul(input=x, other=self.W_query)
k = torch.matmul(input=x, other=self.W_key)
v = torch.matmul(input=x, other=self.W_value)
scaled = torch.div(input=torch.matmul(input=q, other=torch.transpose(input=k, dim0=-2, dim1=-1)), other=k.shape[-1] ** 0.5)
return torch.matmul(input=softmax(scaled, dim=-1), other=v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
query, key, value = (module(x) for module in self.children())
scaled = torch.mul(input=torch.matmul(input=query, other=torch.transpose(input=key, dim0=-2, dim1=-1)), other=self.W_key.out_features ** -0.5)
return torch.matmul(input=softmax(scaled, dim=-1), other=value)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if len(list(v2.parameters())) != 3:
    raise ValueError("v2 has bias parameters; v1 has only its three weight matrices")
with torch.no_grad():
    for target, source in zip(v1.parameters(), v2.parameters()):
        target.copy_(torch.transpose(input=source, dim0=0, dim1=1))
return v1
""",
    ),
]
