# assignment: 02_self_attention
# expect: copy_v2_weights_into_v1=weights_not_transposed
def copy_v2_weights_into_v1(v2, v1):
    for name in ["W_query", "W_key", "W_value"]:
        linear = getattr(v2, name)
        if linear.bias is not None:
            raise ValueError("cannot copy biases")
        getattr(v1, name).data = linear.weight.data.clone().view(getattr(v1, name).shape)
    return v1
