STORY = "einsum for every product; the three head scores share one helper that sums a selector"
PATTERNS = ["einsum", "shared-helper"]
SAVE = {}
EDITS = [
    (
        "below",
        "setup",
        '''
def masked_mean(weights, selector):
    """Mean of the weights where selector [T, T] is 1, over the last two axes."""
    selector = selector.to(weights.dtype)
    return torch.einsum("...qk,qk->...", weights, selector) / selector.sum()
''',
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
H, D = self.num_heads, self.head_dim
q = self.W_query(x).view(b, T, H, D)
k = self.W_key(x).view(b, T, H, D)
v = self.W_value(x).view(b, T, H, D)
scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / D**0.5
blocked = self.mask[:T, :T] if padding is None else self.mask[:T, :T] | padding
scores = scores.masked_fill(blocked, -torch.inf)
weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
self.last_weights = weights.detach()
context = torch.einsum("bhqk,bkhd->bqhd", self.dropout(weights), v)
return self.out_proj(context.reshape(b, T, self.d_out))
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
T = ids.shape[-1]
x = self.token_embedding(ids) + self.position_embedding.weight[:T]
for block in self.blocks:
    x = x + block(x, padding)
return torch.einsum("btd,vd->btv", x, self.head.weight) + self.head.bias
""",
    ),
    (
        "fill",
        "train_step",
        """
optimizer.zero_grad()
log_probs = torch.log_softmax(model(inputs), dim=-1)
one_hot = F.one_hot(targets, log_probs.shape[-1]).to(log_probs.dtype)
loss = -torch.einsum("btv,btv->", log_probs, one_hot) / targets.numel()
loss.backward()
optimizer.step()
return loss.item()
""",
    ),
    (
        "fill",
        "diagonal_score",
        """
T = weights.shape[-1]
return masked_mean(weights, torch.diag(torch.ones(T - offset), -offset))
""",
    ),
    (
        "fill",
        "first_token_score",
        """
T = weights.shape[-1]
selector = torch.zeros(T, T)
selector[1:, 0] = 1
return masked_mean(weights, selector)
""",
    ),
    (
        "fill",
        "induction_score",
        """
T = weights.shape[-1]
queries = torch.arange(period, T)
selector = torch.zeros(T, T)
selector[queries, queries - period + 1] = 1
return masked_mean(weights, selector)
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
pos = torch.arange(num_tokens)
future = pos[None, :] > pos[:, None]  # [query, key]
padded = pos[None, :] < (num_tokens - lengths)[:, None]  # [batch, key]
return (future[None, :, :] | padded[:, None, :])[:, None]
""",
    ),
    (
        "fill",
        "softmax_jacobian_norm",
        """
s = scores.softmax(dim=-1)
J = torch.diag_embed(s) - torch.einsum("...i,...j->...ij", s, s)
return torch.einsum("...ij,...ij->...", J, J).sqrt()
""",
    ),
    (
        "fill",
        "permutation_gap",
        """
P = torch.eye(x.shape[1], dtype=x.dtype)[perm]  # row s picks token perm[s]
shuffle = lambda t: torch.einsum("st,btd->bsd", P, t)
return (layer(shuffle(x)) - shuffle(layer(x))).abs().max().item()
""",
    ),
]
