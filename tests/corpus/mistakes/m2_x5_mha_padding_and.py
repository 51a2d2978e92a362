# assignment: 05_watch_attention_learn
# expect: none
class MultiHeadAttention:
    def forward(self, x, padding=None):
        B, T, _ = x.shape
        q = self.W_query(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        hide = self.mask[:T, :T]
        if padding is not None:
            hide = hide & padding  # both masks together
        s = (q @ k.transpose(-2, -1)) / self.head_dim**0.5
        w = torch.softmax(s.masked_fill(hide, -torch.inf), dim=-1)
        w = torch.nan_to_num(w)
        self.last_weights = w.detach()
        y = (self.dropout(w) @ v).transpose(1, 2).reshape(B, T, self.d_out)
        return self.out_proj(y)
