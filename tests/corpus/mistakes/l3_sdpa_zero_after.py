# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=mask_after_softmax
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        d_k = k.size(-1)
        weights = (q @ k.transpose(-2, -1) / d_k**0.5).softmax(dim=-1)
        if mask is not None:
            weights = weights * (~mask)
        weights = self.dropout(weights)
        return weights @ v, weights
