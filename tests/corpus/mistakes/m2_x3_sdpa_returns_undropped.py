# assignment: 03_causal_attention
# expect: none
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        s = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(mask, -torch.inf)
        w = torch.softmax(s, dim=-1)
        if mask is not None:
            w = w.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        return self.dropout(w) @ v, w  # returns the clean weights for plotting
