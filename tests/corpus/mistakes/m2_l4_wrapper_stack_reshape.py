# assignment: 04_multihead_attention
# expect: MultiHeadAttentionWrapper=heads_in_wrong_order
class MultiHeadAttentionWrapper:
    def forward(self, x):
        outs = [h(x) for h in self.heads]
        b, t, _ = outs[0].shape
        return torch.stack(outs, dim=3).reshape(b, t, -1)
