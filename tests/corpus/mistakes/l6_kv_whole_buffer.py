# assignment: 06_attention_at_inference
# expect: KVCache=empty_slots_returned
class KVCache:
    def forward(self, keys, values):
        p, t = self.position, keys.shape[-2]
        if p + t > self.max_tokens:
            raise ValueError("not enough room in the cache")
        self.keys[..., p : p + t, :] = keys
        self.values[..., p : p + t, :] = values
        self.position = p + t
        return self.keys, self.values
