# assignment: 02_self_attention
# expect: SelfAttention_v1=softmax_wrong_dim
class SelfAttention_v1:
    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        s = torch.matmul(q, k.transpose(-1, -2)) / k.shape[-1] ** 0.5
        return softmax(s, dim=-2) @ v
