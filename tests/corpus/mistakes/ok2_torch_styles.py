# assignment: 02_self_attention
# expect: correct
def softmax(x, dim=-1):
    m = torch.amax(x, dim=dim, keepdim=True).detach()
    m = torch.nan_to_num(m, neginf=0.0)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


def simple_attention_matrix(inputs):
    w = softmax(torch.einsum("...id,...jd->...ij", inputs, inputs), dim=-1)
    return w @ inputs, w


class SelfAttention_v1:
    def forward(self, x):
        import math

        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return softmax(q @ k.mT / math.sqrt(k.shape[-1]), dim=-1) @ v
