# assignment: 04_multihead_attention
# expect: MultiHeadAttention=divide_by_dk
class MultiHeadAttention:
    def forward(self, x):
        b, t, _ = x.shape

        def heads(y):
            return y.view(b, t, self.num_heads, -1).permute(0, 2, 1, 3)

        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        s = torch.matmul(q, k.permute(0, 1, 3, 2)) / self.head_dim
        s = s.masked_fill(self.mask[:t, :t], -torch.inf)
        w = torch.softmax(s, dim=-1)
        ctx = (self.dropout(w) @ v).permute(0, 2, 1, 3).reshape(b, t, self.d_out)
        return self.out_proj(ctx)
