# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=dropout_in_eval
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        s = q @ k.mT / k.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        w = s.softmax(dim=-1)
        if mask is not None:
            w = w.masked_fill(mask.all(-1, keepdim=True), 0.0)
        w = torch.dropout(w, self.dropout.p, True)
        return w @ v, w
