# assignment: 02_self_attention
# expect: SelfAttention_v2=queries_keys_swapped
class SelfAttention_v2:
    def forward(self, x):
        keys, queries = self.W_query(x), self.W_key(x)
        w = softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)
        return w @ self.W_value(x)
