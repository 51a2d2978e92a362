# assignment: 04_multihead_attention
# expect: MultiHeadAttentionWrapper=concatenated_along_tokens
class MultiHeadAttentionWrapper:
    def forward(self, x):
        results = []
        for head in self.heads:
            results.append(head(x))
        return torch.concat(results, dim=-2)
