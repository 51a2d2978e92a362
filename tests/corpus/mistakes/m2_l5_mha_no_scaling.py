# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=no_scaling
class MultiHeadAttention:
    def forward(self, x, padding=None):
        n_batch, n_tok, _ = x.shape

        def to_heads(t):
            # [B, T, d_out] -> [B, H, T, hd]
            return t.reshape(n_batch, n_tok, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

        Q = to_heads(self.W_query(x))
        K = to_heads(self.W_key(x))
        V = to_heads(self.W_value(x))
        att = torch.einsum("bhid,bhjd->bhij", Q, K)
        hide = self.mask[:n_tok, :n_tok]
        if padding is not None:
            hide = torch.logical_or(hide, padding)
        att = att.masked_fill(hide, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = att.masked_fill(torch.isnan(att), 0.0)
        self.last_weights = att.detach()
        out = torch.einsum("bhij,bhjd->bhid", self.dropout(att), V)
        out = out.permute(0, 2, 1, 3).reshape(n_batch, n_tok, self.d_out)
        return self.out_proj(out)
