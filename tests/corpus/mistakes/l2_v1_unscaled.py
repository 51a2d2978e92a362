# assignment: 02_self_attention
# expect: SelfAttention_v1=no_scaling
class SelfAttention_v1:
    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return softmax(torch.einsum("...qd,...kd->...qk", q, k), dim=-1) @ v
