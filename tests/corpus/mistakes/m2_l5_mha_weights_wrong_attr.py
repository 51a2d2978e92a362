# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=weights_not_kept
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape
        shape = (b, t, self.num_heads, self.head_dim)
        q = self.W_query(x).view(shape).transpose(1, 2)
        k = self.W_key(x).view(shape).transpose(1, 2)
        v = self.W_value(x).view(shape).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        blocked = self.mask[:t, :t] if padding is None else self.mask[:t, :t] | padding
        w = torch.softmax(s.masked_fill(blocked, -torch.inf), dim=-1).nan_to_num(0.0)
        self.attn_weights = w.detach()  # keep them for plotting
        return self.out_proj((self.dropout(w) @ v).transpose(1, 2).reshape(b, t, self.d_out))
