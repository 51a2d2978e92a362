# assignment: 04_multihead_attention
# expect: none
class MultiHeadAttention:
    def forward(self, x):
        b, t, _ = x.shape

        def split(y):
            return y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        w = self.dropout(torch.softmax(q @ k.transpose(-2, -1) / self.head_dim**0.5, dim=-1))
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, self.d_out))
