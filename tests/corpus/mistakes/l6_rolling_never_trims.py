# assignment: 06_attention_at_inference
# expect: RollingKVCache=never_trimmed
class RollingKVCache:
    def forward(self, keys, values):
        k = torch.cat((self.keys, keys), dim=2)
        v = torch.cat((self.values, values), dim=2)
        self.keys, self.values = k, v
        self.position += keys.shape[2]
        return k, v
