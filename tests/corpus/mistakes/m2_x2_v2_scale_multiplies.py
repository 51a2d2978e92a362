# assignment: 02_self_attention
# expect: none
class SelfAttention_v2:
    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) * keys.shape[-1] ** 0.5
        return softmax(scores, dim=-1) @ values
