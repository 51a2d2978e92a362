STORY = "his IncompatibleLayers derives from TypeError and ValueError (in that order) and is raised from a loop over named parameters"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "copy_v2_weights_into_v1",
        '''
class IncompatibleLayers(TypeError, ValueError):
    pass


def copy_v2_weights_into_v1(v2, v1):
    """Copy v2's Linear weights (transposed) into v1's parameters; refuse biases."""
    v2_params = dict(v2.named_parameters())
    biases = [n for n in v2_params if n.endswith(".bias")]
    if biases:
        raise IncompatibleLayers(f"cannot copy biases {biases} into SelfAttention_v1")
    for name, param in v1.named_parameters():
        source = v2_params[name + ".weight"].detach().transpose(0, 1)
        param.data = source.clone()
    return v1
''',
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
