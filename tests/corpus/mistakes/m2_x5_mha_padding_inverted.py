# assignment: 05_watch_attention_learn
# expect: none
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape

        def heads(y):
            return y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        blocked = self.mask[:t, :t]
        if padding is not None:
            blocked = blocked | ~padding  # padding marks the real tokens
        s = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        w = torch.softmax(s.masked_fill(blocked, -torch.inf), dim=-1).nan_to_num(0.0)
        self.last_weights = w.detach()
        return self.out_proj((self.dropout(w) @ v).transpose(1, 2).reshape(b, t, self.d_out))
