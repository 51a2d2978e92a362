# assignment: 02_self_attention
# expect: SelfAttention_v2=queries_keys_swapped
class SelfAttention_v2:
    def forward(self, x):
        k, q, v = self.W_query(x), self.W_key(x), self.W_value(x)
        d = k.shape[-1]
        w = softmax(q @ k.transpose(-1, -2) / d**0.5, dim=-1)
        return w @ v
