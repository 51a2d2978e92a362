# assignment: 06_attention_at_inference
# expect: KVCache=no_capacity_check
class KVCache:
    def forward(self, keys, values):
        n = keys.shape[2]
        self.keys.narrow(2, self.position, n).copy_(keys)
        self.values.narrow(2, self.position, n).copy_(values)
        self.position += n
        return self.keys.narrow(2, 0, self.position), self.values.narrow(2, 0, self.position)
