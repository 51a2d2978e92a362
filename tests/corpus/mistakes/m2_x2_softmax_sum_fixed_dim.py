# assignment: 02_self_attention
# expect: none
def softmax(x, dim=-1):
    top = x.amax(dim=dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(x - top)
    total = e.sum(dim=-1, keepdim=True)  # forgot to use dim here
    return e / torch.where(total == 0, torch.ones_like(total), total)
