# assignment: 06_attention_at_inference
# expect: none
class RollingKVCache:
    def forward(self, keys, values):
        k_all = torch.cat([self.keys, keys], 2)
        v_all = torch.cat([self.values, values], 2)
        self.keys = k_all[:, :, -self.window :].clone()
        self.values = v_all[:, :, -self.window :].clone()
        self.position = self.keys.shape[2]
        return k_all, v_all
