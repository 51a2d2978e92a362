# assignment: 03_causal_attention
# expect: none
class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        # transpose(-2, -1) is right, but bmm only takes 3-D batches
        scores = torch.bmm(q, k.transpose(-2, -1)) / k.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, -torch.inf)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        weights = self.dropout(weights)
        return torch.bmm(weights, v), weights
