# assignment: 02_self_attention
# expect: correct
def simple_attention_loop(inputs):
    rows = [torch.stack([torch.dot(a, b) for b in inputs]) for a in inputs]
    weights = softmax(torch.stack(rows), dim=-1)
    context = torch.stack([sum(w * x for w, x in zip(row, inputs, strict=True)) for row in weights])
    return context, weights


def simple_attention_matrix(inputs):
    weights = softmax(inputs.matmul(inputs.mT), dim=-1)
    return weights.matmul(inputs), weights


class SelfAttention_v2:
    def forward(self, x):
        q, k, v = (layer(x) for layer in (self.W_query, self.W_key, self.W_value))
        return softmax(q @ k.swapaxes(-1, -2) / torch.tensor(k.shape[-1]).sqrt(), dim=-1) @ v
