# assignment: 02_self_attention
# expect: copy_v2_weights_into_v1=weights_not_transposed
def copy_v2_weights_into_v1(v2, v1):
    if any(getattr(v2, n).bias is not None for n in ["W_query", "W_key", "W_value"]):
        raise ValueError("v2 has biases, v1 cannot hold them")
    v1.W_query.data = v2.W_query.weight.data.clone()
    v1.W_key.data = v2.W_key.weight.data.clone()
    v1.W_value.data = v2.W_value.weight.data.clone()
    return v1
