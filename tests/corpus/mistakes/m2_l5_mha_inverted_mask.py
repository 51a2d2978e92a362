# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=inverted_mask
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape
        shape = (b, t, self.num_heads, self.head_dim)
        q = self.W_query(x).view(*shape).transpose(1, 2)
        k = self.W_key(x).view(*shape).transpose(1, 2)
        v = self.W_value(x).view(*shape).transpose(1, 2)
        scores = (q @ k.mT) * self.head_dim**-0.5
        # the positions a query is allowed to look at
        visible = ~self.mask[:t, :t]
        if padding is not None:
            visible = visible & ~padding
        scores = torch.where(visible, torch.tensor(float("-inf")), scores)
        probs = torch.softmax(scores, dim=-1)
        probs = torch.nan_to_num(probs, nan=0.0)
        self.last_weights = probs.clone().detach()
        out = self.dropout(probs) @ v
        return self.out_proj(out.transpose(1, 2).contiguous().view(b, t, self.d_out))
