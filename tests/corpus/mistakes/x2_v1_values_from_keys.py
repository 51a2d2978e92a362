# assignment: 02_self_attention
# expect: none
class SelfAttention_v1:
    def forward(self, x):
        q, k = x @ self.W_query, x @ self.W_key
        w = softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
        return w @ k
