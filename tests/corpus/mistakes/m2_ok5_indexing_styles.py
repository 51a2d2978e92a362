# assignment: 05_watch_attention_learn
# expect: correct
def diagonal_score(weights, offset):
    T = weights.shape[-1]
    queries = torch.arange(offset, T)
    return weights[..., queries, queries - offset].mean(-1)


def first_token_score(weights):
    T = weights.shape[-2]
    return weights[..., 1:, 0].sum(dim=-1) / (T - 1)


def induction_score(weights, period):
    T = weights.shape[-1]
    i = torch.arange(period, T)
    return weights[..., i, i - period + 1].mean(dim=-1)


def padding_causal_mask(lengths, num_tokens):
    j = torch.arange(num_tokens).view(1, 1, 1, -1)
    i = torch.arange(num_tokens).view(1, 1, -1, 1)
    start = (num_tokens - lengths).view(-1, 1, 1, 1)
    return (j > i) | (j < start)


def softmax_jacobian_norm(scores):
    s = scores.softmax(-1)
    eye = torch.eye(s.shape[-1], dtype=s.dtype)
    J = torch.einsum("...i,ij->...ij", s, eye) - torch.einsum("...i,...j->...ij", s, s)
    return torch.linalg.matrix_norm(J, ord="fro")


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs).transpose(1, 2), targets, reduction="mean")
    loss.backward()
    optimizer.step()
    return loss.item()
