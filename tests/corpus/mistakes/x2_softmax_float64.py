# assignment: 02_self_attention
# expect: none
def softmax(x, dim=-1):
    # right values, but always float64
    x = x.double()
    top = x.amax(dim=dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(x - top)
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total == 0, torch.ones_like(total), total)
