# assignment: 04_multihead_attention
# expect: correct
class MultiHeadAttentionWrapper:
    def forward(self, x):
        return torch.cat(tuple(map(lambda head: head(x), self.heads)), dim=2)


class MultiHeadAttention:
    def forward(self, x):
        import math

        _, t, _ = x.shape
        q = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)
        k = self.W_key(x).unflatten(-1, (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)
        v = self.W_value(x).unflatten(-1, (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        s = s.masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(torch.softmax(s, dim=-1))
        return self.out_proj((w @ v).permute(0, 2, 1, 3).flatten(2))


def wrapper_d_out():
    return 2 // 2


def gpt2_attention_parameters():
    d = 768
    return 4 * d * d + d
