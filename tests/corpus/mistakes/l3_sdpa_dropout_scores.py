# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=dropout_on_scores
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        s = self.dropout(torch.matmul(q, k.transpose(-1, -2)) / k.shape[-1] ** 0.5)
        if mask is not None:
            s = s.masked_fill(mask, -torch.inf)
        w = torch.softmax(s, dim=-1)
        if mask is not None:
            w = torch.nan_to_num(w, nan=0.0)
        return w @ v, w
