# assignment: 02_self_attention
# expect: softmax=global_max
def softmax(x, dim=-1):
    e = x.sub(x.max()).exp()  # largest exponent is 0
    return e.div(e.sum(dim=dim, keepdim=True))
