# assignment: 04_multihead_attention
# expect: MultiHeadAttention=scale_by_d_out
class MultiHeadAttention:
    def forward(self, x):
        import math

        b, t, _ = x.shape

        def split(y):
            return y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1] * self.num_heads)
        s = s.masked_fill(self.mask[:t, :t], -torch.inf)
        w = self.dropout(torch.softmax(s, dim=-1))
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, self.d_out))
