# assignment: 04_multihead_attention
# expect: MultiHeadAttentionWrapper=heads_in_wrong_order
class MultiHeadAttentionWrapper:
    def forward(self, x):
        return torch.stack([h(x) for h in self.heads], dim=-1).flatten(start_dim=-2)
