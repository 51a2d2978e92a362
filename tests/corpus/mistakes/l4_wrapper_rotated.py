# assignment: 04_multihead_attention
# expect: MultiHeadAttentionWrapper=heads_in_wrong_order
class MultiHeadAttentionWrapper:
    def forward(self, x):
        outs = [head(x) for head in self.heads]
        return torch.cat(outs[1:] + outs[:1], dim=-1)
