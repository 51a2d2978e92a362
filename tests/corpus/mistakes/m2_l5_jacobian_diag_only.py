# assignment: 05_watch_attention_learn
# expect: softmax_jacobian_norm=no_outer_product
def softmax_jacobian_norm(scores):
    s = F.softmax(scores, dim=-1)
    # J is diagonal with s on it, so its Frobenius norm is sqrt(sum s_i^2)
    return s.pow(2).sum(dim=-1).sqrt()
