# assignment: 02_self_attention
# expect: softmax=no_max_subtraction
def softmax(x, dim=-1):
    ex = x.exp()
    return ex / ex.sum(dim, keepdim=True)
