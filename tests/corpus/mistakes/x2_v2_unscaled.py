# assignment: 02_self_attention
# expect: SelfAttention_v2=no_scaling
class SelfAttention_v2:
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return softmax(q @ k.transpose(-2, -1), dim=-1) @ v
