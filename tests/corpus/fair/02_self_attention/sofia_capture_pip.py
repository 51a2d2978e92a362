STORY = "a %%capture cell that pip-installs quietly, turns on inline plots, asks for a seed with input() (guarded) and defines the helpers both attention classes use"
PATTERNS = ["magics", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "above",
        "SelfAttention_v1",
        '''
%%capture
!pip install -q torch matplotlib
%matplotlib inline
try:
    SEED = int(input("seed for the demos: "))
except Exception:
    SEED = 123


def attend(queries, keys, values):
    """scaled dot-product attention with my softmax, any batch axes"""
    scores = torch.matmul(queries, keys.transpose(-2, -1))
    weights = softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)
    return torch.matmul(weights, values)


import math
''',
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
return attend(x @ self.W_query, x @ self.W_key, x @ self.W_value)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
return attend(self.W_query(x), self.W_key(x), self.W_value(x))
""",
    ),
    (
        "below",
        "test_v2_forward",
        """
torch.manual_seed(SEED)
print(SelfAttention_v2(3, 2)(inputs))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
