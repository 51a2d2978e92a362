# assignment: 02_self_attention
# expect: softmax=library_softmax
def softmax(x, dim=-1):
    import torch.nn.functional as F

    return F.softmax(x, dim=dim)
