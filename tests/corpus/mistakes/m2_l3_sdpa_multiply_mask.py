# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=mask_after_softmax
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        d_k = k.size(-1)
        attn = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / d_k**0.5, dim=-1)
        if mask is not None:
            attn = attn * mask.logical_not()  # zero out the blocked keys
        attn = self.dropout(attn)
        return torch.matmul(attn, v), attn
