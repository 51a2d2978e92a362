STORY = "defines class ShapeError(ValueError) and raises it for biases and for mismatched sizes; copies with copy_ under no_grad"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "above",
        "copy_v2_weights_into_v1",
        '''
class ShapeError(ValueError):
    """The two layers cannot hold the same weights."""
''',
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
pairs = [(v1.W_query, v2.W_query), (v1.W_key, v2.W_key), (v1.W_value, v2.W_value)]
for param, linear in pairs:
    if linear.bias is not None:
        raise ShapeError("v2 has biases (qkv_bias=True); v1 has nowhere to put them")
    if param.shape != linear.weight.T.shape:
        raise ShapeError(f"v1 weight {tuple(param.shape)} vs v2 weight.T {tuple(linear.weight.T.shape)}")
with torch.no_grad():
    for param, linear in pairs:
        param.copy_(linear.weight.t())
return v1
""",
    ),
    (
        "below",
        "test_weight_transfer",
        """
try:
    copy_v2_weights_into_v1(SelfAttention_v2(3, 2, qkv_bias=True), SelfAttention_v1(3, 2))
except ValueError as err:  # ShapeError is a ValueError
    print(type(err).__name__, "->", err)
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
