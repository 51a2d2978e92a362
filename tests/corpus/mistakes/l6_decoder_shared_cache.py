# assignment: 06_attention_at_inference
# expect: TinyDecoder=one_cache_for_every_block
class TinyDecoder:
    def forward(self, ids, use_cache=False):
        x = self.token_embedding(ids)
        for block in self.blocks:
            x = x + block(x, self.caches[0] if use_cache else None)
        return self.head(x)
