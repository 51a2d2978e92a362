# assignment: 02_self_attention
# expect: softmax=ignores_dim
def softmax(x, dim=-1):
    biggest = torch.max(x, -1, keepdim=True)[0]
    biggest = torch.nan_to_num(biggest, neginf=0.0)
    ex = torch.exp(x - biggest)
    total = torch.sum(ex, -1, keepdim=True)
    return ex / total.clamp(min=torch.finfo(x.dtype).tiny)
