# assignment: 03_causal_attention
# expect: correct
def causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)


def apply_causal_mask(scores):
    n = scores.shape[-1]
    return scores.masked_fill(causal_mask(n), float("-inf"))


class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        s = torch.matmul(q, k.transpose(-1, -2)) * k.shape[-1] ** -0.5
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        w = torch.softmax(s, dim=-1)
        if mask is not None:
            w = torch.where(mask.all(dim=-1, keepdim=True), torch.zeros_like(w), w)
        w = self.dropout(w)
        return w @ v, w
