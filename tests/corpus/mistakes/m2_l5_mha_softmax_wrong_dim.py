# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=softmax_wrong_dim
class MultiHeadAttention:
    def forward(self, x, padding=None):
        bsz, seq, _ = x.size()
        H, D = self.num_heads, self.head_dim
        q = self.W_query(x).view(bsz, seq, H, D).permute(0, 2, 1, 3)
        k = self.W_key(x).view(bsz, seq, H, D).permute(0, 2, 3, 1)  # already transposed
        v = self.W_value(x).view(bsz, seq, H, D).permute(0, 2, 1, 3)
        e = q @ k / math.sqrt(D)
        m = self.mask[:seq, :seq]
        if padding is not None:
            m = m | padding
        e = e.masked_fill(m, float("-inf"))
        a = torch.nan_to_num(F.softmax(e, dim=2))
        self.last_weights = a.detach()
        y = (self.dropout(a) @ v).permute(0, 2, 1, 3).reshape(bsz, seq, H * D)
        return self.out_proj(y)
