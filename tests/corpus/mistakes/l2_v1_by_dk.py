# assignment: 02_self_attention
# expect: SelfAttention_v1=divide_by_dk
class SelfAttention_v1:
    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        d_k = self.W_key.shape[1]
        return softmax(q @ k.transpose(-1, -2) / d_k, dim=-1) @ v
