# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=out_proj_missing
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape
        h, d = self.num_heads, self.head_dim
        q = self.W_query(x).view(b, t, h, d)
        k = self.W_key(x).view(b, t, h, d)
        v = self.W_value(x).view(b, t, h, d)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / d**0.5
        off = self.mask[:t, :t]
        if padding is not None:
            off = off | padding
        s = s.masked_fill(off, -torch.inf)
        w = torch.softmax(s, -1).nan_to_num(0.0)
        self.last_weights = w.detach()
        o = torch.einsum("bhqk,bkhd->bqhd", self.dropout(w), v)
        return o.reshape(b, t, h * d)  # the heads, side by side
