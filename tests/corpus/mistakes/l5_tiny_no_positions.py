# assignment: 05_watch_attention_learn
# expect: TinyTransformer=no_positions
class TinyTransformer:
    def forward(self, ids, padding=None):
        h = self.token_embedding(ids)
        for block in self.blocks:
            h = h + block(h, padding)
        return self.head(h)
