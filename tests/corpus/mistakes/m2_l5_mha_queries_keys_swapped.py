# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=queries_keys_swapped
class MultiHeadAttention:
    def forward(self, x, padding=None):
        T = x.shape[1]

        def split_heads(z):
            return z.unflatten(2, (self.num_heads, self.head_dim)).transpose(1, 2)

        keys = split_heads(self.W_query(x))
        queries = split_heads(self.W_key(x))
        values = split_heads(self.W_value(x))
        logits = torch.matmul(queries, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        no_look = self.mask[:T, :T]
        if padding is not None:
            no_look = no_look + padding  # bool + bool is "or"
        logits = logits.masked_fill(no_look, -math.inf)
        attn = logits.softmax(dim=-1)
        attn = attn.masked_fill(no_look.all(dim=-1, keepdim=True), 0.0)
        self.last_weights = attn.detach()
        ctx = torch.matmul(self.dropout(attn), values).transpose(1, 2).flatten(2)
        return self.out_proj(ctx)
