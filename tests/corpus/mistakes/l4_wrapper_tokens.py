# assignment: 04_multihead_attention
# expect: MultiHeadAttentionWrapper=concatenated_along_tokens
class MultiHeadAttentionWrapper:
    def forward(self, x):
        return torch.concat([h(x) for h in self.heads], dim=-2)
