# assignment: 02_self_attention
# expect: SelfAttention_v1=queries_keys_swapped
class SelfAttention_v1:
    def forward(self, x):
        k = torch.matmul(x, self.W_query)
        q = torch.matmul(x, self.W_key)
        w = softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
        return w @ torch.matmul(x, self.W_value)
