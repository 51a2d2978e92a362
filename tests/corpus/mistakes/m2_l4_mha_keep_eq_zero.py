# assignment: 04_multihead_attention
# expect: MultiHeadAttention=inverted_mask
class MultiHeadAttention:
    def forward(self, x):
        n, T, _ = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.W_query(x).reshape(n, T, H, D).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(n, T, H, D).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(n, T, H, D).permute(0, 2, 1, 3)
        att = q @ k.transpose(-2, -1) / D**0.5
        keep = self.mask[:T, :T]
        att = att.masked_fill(keep == 0, float("-inf"))
        att = self.dropout(torch.softmax(att, dim=-1))
        out = (att @ v).permute(0, 2, 1, 3).reshape(n, T, H * D)
        return self.out_proj(out)
