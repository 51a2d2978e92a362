# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=view_without_transpose
class MultiHeadAttention:
    def forward(self, x, padding=None):
        B, T, _ = x.shape
        nh, hs = self.num_heads, self.head_dim
        # [B, T, d_out] -> [B, nh, T, hs]
        q = self.W_query(x).reshape(B, nh, T, hs)
        k = self.W_key(x).reshape(B, nh, T, hs)
        v = self.W_value(x).reshape(B, nh, T, hs)
        att = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(hs))
        causal = self.mask[:T, :T]
        att = att.masked_fill(causal if padding is None else causal | padding, float("-inf"))
        att = torch.softmax(att, dim=-1)
        att = torch.where(att.isnan(), 0.0, att)
        self.last_weights = att.detach()
        y = self.dropout(att) @ v
        y = y.permute(0, 2, 1, 3).reshape(B, T, nh * hs)
        return self.out_proj(y)
