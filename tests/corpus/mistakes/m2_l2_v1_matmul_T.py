# assignment: 02_self_attention
# expect: SelfAttention_v1=keys_dot_T_batched
class SelfAttention_v1:
    def forward(self, x):
        q = torch.matmul(x, self.W_query)
        k = torch.matmul(x, self.W_key)
        v = torch.matmul(x, self.W_value)
        att = softmax(torch.matmul(q, k.T) * k.shape[-1] ** -0.5, dim=-1)
        return torch.matmul(att, v)
