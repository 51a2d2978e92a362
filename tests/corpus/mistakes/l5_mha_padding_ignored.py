# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=padding_ignored
class MultiHeadAttention:
    def forward(self, x, padding=None):
        T = x.shape[1]

        def heads(y):
            return y.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        self.last_weights = weights.detach()
        context = self.dropout(weights) @ v
        return self.out_proj(context.transpose(1, 2).flatten(2))
