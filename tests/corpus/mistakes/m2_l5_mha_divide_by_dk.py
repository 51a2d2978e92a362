# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=divide_by_dk
class MultiHeadAttention:
    def forward(self, x, padding=None):
        B, T, _ = x.shape
        hd = self.head_dim
        q_all, k_all, v_all = self.W_query(x), self.W_key(x), self.W_value(x)
        blocked = self.mask[:T, :T] if padding is None else self.mask[:T, :T] | padding
        blocked = blocked.expand(B, self.num_heads, T, T)
        head_weights = []
        for h in range(self.num_heads):
            q = q_all[:, :, h * hd : (h + 1) * hd]
            k = k_all[:, :, h * hd : (h + 1) * hd]
            s = torch.bmm(q, k.transpose(1, 2)) / hd  # scale the scores by the key width
            s = s.masked_fill(blocked[:, h], -float("inf"))
            w = torch.softmax(s, dim=-1)
            head_weights.append(torch.where(torch.isnan(w), torch.zeros_like(w), w))
        weights = torch.stack(head_weights, dim=1)
        self.last_weights = weights.detach()
        weights = self.dropout(weights)
        ctx = [weights[:, h] @ v_all[:, :, h * hd : (h + 1) * hd] for h in range(self.num_heads)]
        return self.out_proj(torch.cat(ctx, dim=-1))
