# assignment: 02_self_attention
# expect: none
def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    x.sub_(m)
    x.exp_()
    s = x.sum(dim=dim, keepdim=True)
    return x / torch.where(s == 0, torch.ones_like(s), s)
