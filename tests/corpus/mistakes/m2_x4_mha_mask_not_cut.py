# assignment: 04_multihead_attention
# expect: none
class MultiHeadAttention:
    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / self.head_dim**0.5
        s = s.masked_fill(self.mask, -torch.inf)
        w = self.dropout(torch.softmax(s, dim=-1))
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, self.d_out))
