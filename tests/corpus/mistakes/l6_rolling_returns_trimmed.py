# assignment: 06_attention_at_inference
# expect: RollingKVCache=trimmed_before_returning
class RollingKVCache:
    def forward(self, keys, values):
        self.keys = torch.cat([self.keys, keys], dim=2)[:, :, -self.window :]
        self.values = torch.cat([self.values, values], dim=2)[:, :, -self.window :]
        self.position += keys.shape[2]
        return self.keys, self.values
