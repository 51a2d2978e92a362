STORY = "her BiasNotSupported(ValueError) keeps the offending nn.Linear and formats its own message; a helper raises it"
PATTERNS = ["shared-helper"]
SAVE = {}
EDITS = [
    (
        "replace",
        "copy_v2_weights_into_v1",
        """
class BiasNotSupported(ValueError):
    def __init__(self, name, layer):
        super().__init__(name, layer)
        self.name = name
        self.layer = layer  # keep it so I can look at it in the debugger

    def __str__(self):
        return f"{self.name} has a bias of shape {tuple(self.layer.bias.shape)}; SelfAttention_v1 has no biases"


def check_no_bias(name, layer):
    if layer.bias is not None:
        raise BiasNotSupported(name, layer)
    return layer


def transposed(name, layer):
    return nn.Parameter(check_no_bias(name, layer).weight.detach().T.clone())


def copy_v2_weights_into_v1(v2: SelfAttention_v2, v1: SelfAttention_v1) -> SelfAttention_v1:
    for name in ["W_query", "W_key", "W_value"]:
        check_no_bias(name, getattr(v2, name))  # refuse before changing anything
    v1.W_query = transposed("W_query", v2.W_query)
    v1.W_key = transposed("W_key", v2.W_key)
    v1.W_value = transposed("W_value", v2.W_value)
    return v1
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
