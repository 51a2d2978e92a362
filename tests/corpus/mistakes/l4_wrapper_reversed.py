# assignment: 04_multihead_attention
# expect: MultiHeadAttentionWrapper=heads_in_wrong_order
class MultiHeadAttentionWrapper:
    def forward(self, x):
        return torch.cat([self.heads[i](x) for i in range(len(self.heads) - 1, -1, -1)], -1)
