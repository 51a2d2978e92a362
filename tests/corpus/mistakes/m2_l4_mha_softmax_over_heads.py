# assignment: 04_multihead_attention
# expect: MultiHeadAttention=softmax_wrong_dim
class MultiHeadAttention:
    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_query(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        att = torch.matmul(q, k.transpose(2, 3)) / self.head_dim**0.5
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.dropout(F.softmax(att, dim=1))
        y = torch.matmul(att, v).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(y)
