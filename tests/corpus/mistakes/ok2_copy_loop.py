# assignment: 02_self_attention
# expect: correct
def copy_v2_weights_into_v1(v2, v1):
    pairs = [(v1.W_query, v2.W_query), (v1.W_key, v2.W_key), (v1.W_value, v2.W_value)]
    if any(linear.bias is not None for _, linear in pairs):
        raise ValueError("SelfAttention_v1 has no bias to copy into")
    with torch.no_grad():
        for target, linear in pairs:
            target.copy_(linear.weight.t())
    return v1


class SelfAttention_v2:
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return softmax(q @ k.transpose(-2, -1) / k.size(-1) ** 0.5, dim=-1) @ v
