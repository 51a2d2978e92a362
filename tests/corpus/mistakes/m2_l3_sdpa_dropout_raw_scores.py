# assignment: 03_causal_attention
# expect: ScaledDotProductAttention=dropout_on_scores
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        raw = self.dropout(torch.matmul(q, k.transpose(-2, -1)))  # regularise the scores
        scores = raw / k.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = torch.where(mask.all(dim=-1, keepdim=True), 0.0, weights)
        return weights @ v, weights
