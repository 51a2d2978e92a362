# assignment: 02_self_attention
# expect: softmax=global_max
def softmax(x, dim=-1):
    shifted = x - torch.max(x)
    e = shifted.exp()
    s = e.sum(dim, keepdim=True)
    return e / torch.where(s > 0, s, torch.ones_like(s))
