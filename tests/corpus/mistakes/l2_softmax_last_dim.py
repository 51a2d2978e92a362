# assignment: 02_self_attention
# expect: softmax=ignores_dim
def softmax(x, dim=-1):
    biggest = torch.max(x, -1, keepdim=True)[0]
    ex = torch.exp(x - biggest)
    return ex / torch.sum(ex, -1, keepdim=True)
