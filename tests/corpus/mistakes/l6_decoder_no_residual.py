# assignment: 06_attention_at_inference
# expect: none
class TinyDecoder:
    def forward(self, ids, use_cache=False):
        h = self.token_embedding(ids)
        for i, block in enumerate(self.blocks):
            cache = self.caches[i] if use_cache else None
            h = block(h, cache)
        return self.head(h)
