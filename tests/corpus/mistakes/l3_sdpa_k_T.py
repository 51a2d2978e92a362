# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=keys_dot_T_batched
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        import math

        scores = torch.matmul(q, k.T) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return torch.matmul(weights, v), weights
