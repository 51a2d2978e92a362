# assignment: 02_self_attention
# expect: softmax=library_softmax
def softmax(x, dim=-1):
    return x.softmax(dim)
