# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=nan_for_blocked_rows
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape

        def split(y):
            return y.view(b, t, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        mask = self.mask[:t, :t] if padding is None else self.mask[:t, :t] | padding
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        self.last_weights = weights.detach()
        out = self.dropout(weights) @ v
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(b, t, self.d_out))
