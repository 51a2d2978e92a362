# assignment: 05_watch_attention_learn
# expect: correct
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape
        q, k, v = (
            proj(x).reshape(b, t, self.num_heads, self.head_dim)
            for proj in (self.W_query, self.W_key, self.W_value)
        )
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        hidden = self.mask[:t, :t].expand(b, self.num_heads, t, t)
        if padding is not None:
            hidden = hidden | padding
        scores = torch.where(hidden, -torch.inf, scores)
        weights = torch.softmax(scores, dim=-1)
        weights = torch.where(hidden.all(-1, keepdim=True), 0.0, weights)
        self.last_weights = weights.detach().clone()
        ctx = torch.einsum("bhqk,bkhd->bqhd", self.dropout(weights), v)
        return self.out_proj(ctx.flatten(start_dim=2))


class TinyTransformer:
    def forward(self, ids, padding=None):
        _, T = ids.shape
        x = self.token_embedding(ids) + self.position_embedding.weight[:T]
        for i in range(len(self.blocks)):
            x = x + self.blocks[i](x, padding=padding)
        return self.head(x)
