# assignment: 04_multihead_attention
# expect: correct
class MultiHeadAttentionWrapper:
    def forward(self, x):
        out = None
        for head in self.heads:
            y = head(x)
            out = y if out is None else torch.cat((out, y), dim=-1)
        return out


class MultiHeadAttention:
    def forward(self, x):
        _, t, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        hd = self.head_dim
        scores = (
            torch.stack(
                [
                    q[..., h * hd : (h + 1) * hd] @ k[..., h * hd : (h + 1) * hd].mT
                    for h in range(self.num_heads)
                ],
                dim=1,
            )
            / hd**0.5
        )
        scores = scores.masked_fill(self.mask[:t, :t], float("-inf"))
        weights = self.dropout(F.softmax(scores, dim=-1))
        parts = [weights[:, h] @ v[..., h * hd : (h + 1) * hd] for h in range(self.num_heads)]
        return self.out_proj(torch.cat(parts, dim=-1))


def gpt2_attention_parameters():
    layer = MultiHeadAttention(768, 768, 1024, 0.0, 12)
    return sum(p.numel() for p in layer.parameters() if p.requires_grad)
