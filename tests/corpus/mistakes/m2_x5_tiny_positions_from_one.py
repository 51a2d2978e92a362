# assignment: 05_watch_attention_learn
# expect: none
class TinyTransformer:
    def forward(self, ids, padding=None):
        T = ids.shape[-1]
        positions = torch.arange(1, T + 1)  # positions 1..T
        h = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks:
            h = h + block(h, padding)
        return self.head(h)
