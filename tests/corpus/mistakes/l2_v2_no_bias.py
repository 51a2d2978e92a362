# assignment: 02_self_attention
# expect: SelfAttention_v2=qkv_bias_ignored
class SelfAttention_v2:
    def forward(self, x):
        import torch.nn.functional as F

        q = F.linear(x, self.W_query.weight)
        k = F.linear(x, self.W_key.weight)
        v = F.linear(x, self.W_value.weight)
        return softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) @ v
