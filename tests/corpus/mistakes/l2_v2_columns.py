# assignment: 02_self_attention
# expect: SelfAttention_v2=softmax_wrong_dim
class SelfAttention_v2:
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = softmax(q @ k.mT / k.shape[-1] ** 0.5, dim=-2)
        return w @ v
