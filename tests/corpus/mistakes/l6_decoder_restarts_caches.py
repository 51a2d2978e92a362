# assignment: 06_attention_at_inference
# expect: TinyDecoder=caches_not_passed
class TinyDecoder:
    def forward(self, ids, use_cache=False):
        if use_cache:
            self.start_caches(ids.shape[0])  # every block needs its cache
        x = self.token_embedding(ids)
        for i, block in enumerate(self.blocks):
            x = x + block(x, self.caches[i] if use_cache else None)
        return self.head(x)
