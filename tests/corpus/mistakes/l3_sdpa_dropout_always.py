# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=dropout_in_eval
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        import torch.nn.functional as F

        s = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(mask, -torch.inf)
        w = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)
        w = F.dropout(w, self.dropout.p)
        return w @ v, w
