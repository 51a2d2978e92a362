# assignment: 04_multihead_attention
# expect: MultiHeadAttention=heads_merged_without_transpose
class MultiHeadAttention:
    def forward(self, x):
        b, t, _ = x.shape

        def split(y):
            return y.view(b, t, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / self.head_dim**0.5
        s = s.masked_fill(self.mask[:t, :t], -torch.inf)
        w = self.dropout(s.softmax(-1))
        ctx = torch.matmul(w, v).contiguous().view(b, t, self.d_out)
        return self.out_proj(ctx)
