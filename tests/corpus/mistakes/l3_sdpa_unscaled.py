# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=no_scaling
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        s = torch.einsum("...qd,...kd->...qk", q, k)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        w = torch.softmax(s, dim=-1)
        if mask is not None:
            w = torch.where(mask.all(-1, keepdim=True), torch.zeros_like(w), w)
        w = self.dropout(w)
        return w @ v, w
