# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=heads_merged_without_transpose
class MultiHeadAttention:
    def forward(self, x, padding=None):
        batch_size, length, _ = x.shape
        per_head = (batch_size, length, self.num_heads, self.head_dim)
        queries = torch.permute(self.W_query(x).view(per_head), (0, 2, 1, 3))
        keys = torch.permute(self.W_key(x).view(per_head), (0, 2, 1, 3))
        values = torch.permute(self.W_value(x).view(per_head), (0, 2, 1, 3))
        energy = queries @ keys.transpose(-2, -1)
        energy = energy / torch.sqrt(torch.tensor(float(self.head_dim)))
        masked = self.mask[:length, :length]
        if padding is not None:
            masked = masked | padding
        energy = energy.masked_fill(masked, float("-inf"))
        attention = torch.softmax(energy, dim=-1)
        everything_masked = masked.all(dim=-1, keepdim=True)
        attention = attention.masked_fill(everything_masked, 0.0)
        self.last_weights = attention.detach()
        heads_out = self.dropout(attention) @ values  # [B, H, T, hd]
        concat = heads_out.contiguous().view(batch_size, length, self.d_out)
        return self.out_proj(concat)
