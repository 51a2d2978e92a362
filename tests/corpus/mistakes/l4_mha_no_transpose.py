# assignment: 04_multihead_attention
# expect: MultiHeadAttention=view_without_transpose
class MultiHeadAttention:
    def forward(self, x):
        import math

        b, t, _ = x.shape
        h, hd = self.num_heads, self.head_dim
        q = self.W_query(x).reshape(b, h, t, hd)
        k = self.W_key(x).reshape(b, h, t, hd)
        v = self.W_value(x).reshape(b, h, t, hd)
        s = q @ k.transpose(2, 3) / math.sqrt(hd)
        s = s.masked_fill(self.mask.bool()[:t, :t], float("-inf"))
        w = self.dropout(torch.softmax(s, dim=-1))
        ctx = (w @ v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return self.out_proj(ctx)
