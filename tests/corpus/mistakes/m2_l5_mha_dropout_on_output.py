# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=dropout_on_output
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, n, _ = x.shape

        def heads(proj):
            return proj(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.W_query), heads(self.W_key), heads(self.W_value)
        score = q @ k.transpose(-2, -1) / self.head_dim**0.5
        block = self.mask[:n, :n] if padding is None else (self.mask[:n, :n] | padding)
        score = score.masked_fill(block, -torch.inf)
        att = torch.softmax(score, dim=-1).nan_to_num(0.0)
        self.last_weights = att.detach()
        merged = (att @ v).transpose(1, 2).reshape(b, n, self.d_out)
        merged = F.dropout(merged, p=self.dropout.p, training=self.training)
        return self.out_proj(merged)
