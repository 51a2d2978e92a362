# assignment: 06_attention_at_inference
# expect: KVCache=position_not_advanced
class KVCache:
    def forward(self, keys, values):
        t = keys.shape[2]
        end = self.position + t
        if end > self.max_tokens:
            raise ValueError(f"cache full: {self.position} + {t} > {self.max_tokens}")
        self.keys[:, :, self.position : end] = keys
        self.values[:, :, self.position : end] = values
        return self.keys[:, :, :end], self.values[:, :, :end]
