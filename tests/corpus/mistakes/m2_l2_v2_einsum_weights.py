# assignment: 02_self_attention
# expect: SelfAttention_v2=qkv_bias_ignored
class SelfAttention_v2:
    def forward(self, x):
        def project(lin):
            return torch.einsum("...i,oi->...o", x, lin.weight)

        q, k, v = project(self.W_query), project(self.W_key), project(self.W_value)
        return softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) @ v
