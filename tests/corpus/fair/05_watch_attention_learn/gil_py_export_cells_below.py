# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a .py download; every answer in a new cell under its stub (forward patched onto the class); strided reads of the flattened weights"
PATTERNS = [
    "py-export",
    "renamed-file",
    "answer-in-new-cell-below",
    "star-import",
    "help-syntax",
    "block-globals",
]
SAVE = {"file": "gil_05_watch_attention_learn.py", "editor": "py"}
EDITS = [
    ("below", "setup", "from math import *\nfrom functools import reduce\ntorch.diagonal?"),
    (
        "below",
        "MultiHeadAttention",
        """
def _mha_forward(self, x, padding=None):
    B, T, _ = x.shape
    shape = (B, T, self.num_heads, self.head_dim)
    q = self.W_query(x).reshape(shape).permute(0, 2, 1, 3)
    k = self.W_key(x).reshape(shape).permute(0, 2, 1, 3)
    v = self.W_value(x).reshape(shape).permute(0, 2, 1, 3)
    blocked = self.mask[:T, :T]
    if padding is not None:
        blocked = blocked + padding  # bool + bool is "or"
    scores = (q @ k.permute(0, 1, 3, 2)) / sqrt(self.head_dim)
    w = F.softmax(scores.masked_fill(blocked, -inf), dim=-1)
    w = w.masked_fill(blocked.all(dim=-1, keepdim=True), 0.0)
    self.last_weights = w.detach()
    out = self.dropout(w) @ v
    return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, T, self.d_out))


MultiHeadAttention.forward = _mha_forward
""",
    ),
    (
        "below",
        "TinyTransformer",
        """
def _tiny_forward(self, ids, padding=None):
    positions = torch.arange(ids.shape[1], device=ids.device)
    x = self.token_embedding(ids) + self.position_embedding(positions)[None]
    x = reduce(lambda h, block: h + block(h, padding), self.blocks, x)
    return self.head(x)


TinyTransformer.forward = _tiny_forward
""",
    ),
    (
        "below",
        "train_step",
        """
def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    logits = model(inputs)  # [batch, T, vocab]
    loss = F.cross_entropy(logits.transpose(1, 2), targets)  # wants [batch, vocab, T]
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    (
        "below",
        "diagonal_score",
        """
def diagonal_score(weights, offset):
    T = weights.shape[-1]
    # flattened, (i, i - offset) sits at i * T + i - offset: start at row offset, step T + 1
    return weights.flatten(-2)[..., offset * T :: T + 1].mean(-1)
""",
    ),
    (
        "below",
        "first_token_score",
        """
def first_token_score(weights):
    T = weights.shape[-1]
    return weights.flatten(-2)[..., T::T].mean(-1)  # (1, 0), (2, 0), ...
""",
    ),
    (
        "below",
        "induction_score",
        """
def induction_score(weights, period):
    T = weights.shape[-1]
    return weights.flatten(-2)[..., period * T + 1 :: T + 1].mean(-1)  # from (period, 1)
""",
    ),
    (
        "below",
        "padding_causal_mask",
        """
def padding_causal_mask(lengths, num_tokens):
    causal = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    masks = []
    for n in lengths.tolist():
        m = causal.clone()
        m[:, : num_tokens - n] = True
        masks.append(m)
    return torch.stack(masks).unsqueeze(1)
""",
    ),
    (
        "below",
        "softmax_jacobian_norm",
        """
def softmax_jacobian_norm(scores):
    s = F.softmax(scores, dim=-1)
    J = torch.diag_embed(s) - s[..., :, None] @ s[..., None, :]
    return torch.norm(J, dim=(-2, -1))
""",
    ),
    (
        "below",
        "permutation_gap",
        """
def permutation_gap(layer, x, perm):
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(len(perm))
    # undo the shuffle instead of shuffling the other side: the same differences
    return float((layer(x[:, perm])[:, inverse] - layer(x)).abs().max())
""",
    ),
    (
        "end",
        None,
        """
probe = torch.randn(1, 6, 16)
for trial in range(3):
    order = torch.randperm(6)
    print(trial, permutation_gap(lambda v: v * 2, probe, order))
""",
    ),
]
