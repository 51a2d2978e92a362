# assignment: 05_watch_attention_learn
# expect: TinyTransformer=no_residual
class TinyTransformer:
    def forward(self, ids, padding=None):
        T = ids.shape[1]
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(T))
        for block in self.blocks:
            x = block(x, padding)
        return self.head(x)
