# assignment: 02_self_attention
# expect: SelfAttention_v1=scale_by_d_in
class SelfAttention_v1:
    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        d_in = self.W_query.shape[0]
        return softmax(q @ k.transpose(-1, -2) / d_in**0.5, dim=-1) @ v
