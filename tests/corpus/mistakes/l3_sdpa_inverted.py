# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=inverted_mask
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        s = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        if mask is not None:
            s = torch.where(mask, s, torch.full_like(s, float("-inf")))
        w = torch.nan_to_num(torch.softmax(s, dim=-1))
        w = self.dropout(w)
        return w @ v, w
