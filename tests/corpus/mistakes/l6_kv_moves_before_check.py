# assignment: 06_attention_at_inference
# expect: none
class KVCache:
    def forward(self, keys, values):
        t = keys.size(-2)
        start = self.position
        self.position += t
        if self.position > self.max_tokens:
            raise ValueError("KV cache overflow")
        idx = torch.arange(start, self.position)
        self.keys.index_copy_(2, idx, keys)
        self.values.index_copy_(2, idx, values)
        return self.keys[:, :, : self.position], self.values[:, :, : self.position]
