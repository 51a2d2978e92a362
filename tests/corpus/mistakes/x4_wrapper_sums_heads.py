# assignment: 04_multihead_attention
# expect: none
class MultiHeadAttentionWrapper:
    def forward(self, x):
        return torch.stack([head(x) for head in self.heads]).sum(0)
