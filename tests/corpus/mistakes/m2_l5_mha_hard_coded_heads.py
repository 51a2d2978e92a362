# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=hard_coded_heads
class MultiHeadAttention:
    def forward(self, x, padding=None):
        n_heads = 2  # as in the demo
        size = self.d_out // n_heads
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, n_heads, size).transpose(1, 2)
        k = self.W_key(x).view(b, t, n_heads, size).transpose(1, 2)
        v = self.W_value(x).view(b, t, n_heads, size).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(size)
        blocked = self.mask[:t, :t]
        if padding is not None:
            blocked = blocked | padding
        att = torch.softmax(att.masked_fill(blocked, -torch.inf), dim=-1)
        att = torch.nan_to_num(att, nan=0.0)
        self.last_weights = att.detach()
        y = (self.dropout(att) @ v).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(y)
