# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=weights_not_kept
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        blocked = self.mask[:t, :t]
        if padding is not None:
            blocked = blocked | padding
        s = (q @ k.transpose(-2, -1)) / self.head_dim**0.5
        w = torch.softmax(s.masked_fill(blocked, -torch.inf), dim=-1).nan_to_num(0.0)
        w = self.dropout(w)
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, self.d_out))
