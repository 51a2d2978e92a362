# assignment: 02_self_attention
# expect: copy_v2_weights_into_v1=weights_not_transposed
def copy_v2_weights_into_v1(v2, v1):
    for name in ["W_query", "W_key", "W_value"]:
        if getattr(v2, name).bias is not None:
            raise ValueError("no bias in v1")
        setattr(v1, name, torch.nn.Parameter(getattr(v2, name).weight.detach().clone()))
    return v1
