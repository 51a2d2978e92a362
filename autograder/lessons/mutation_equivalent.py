"""The surviving mutants a human has judged equivalent to the reference, with the reason.

A mutant is equivalent when, on every input the exercise's contract allows and the
grader can send, it computes what the reference computes: a dropped guard for a
precondition the contract leaves to the caller, a width read from another tensor that
the contract makes the same width, a swapped pair of a symmetric operation.
:mod:`.mutation` lists a survivor here as *equivalent*; any other survivor that agrees
with the reference on random inputs is *likely equivalent*, waiting for a judgement.
"""

from __future__ import annotations

L1, L2, L3, L4, L5 = (
    "01_numpy_attention",
    "02_self_attention",
    "03_causal_attention",
    "04_multihead_attention",
    "05_watch_attention_learn",
)
GUARD = "if num_tokens > self.mask.shape[0]:"
RAISE_T = (
    "raise ValueError(f'input has {num_tokens} tokens but context_length is {self.mask.shape[0]}')"
)
RAISE_CUT = "raise ValueError(f'input has {num_tokens} tokens but cont... -> pass"
PRECONDITION = "T <= context_length is the caller's promise (contract), not a checked error"
SQUARE = "the mask buffer is square: shape[1] and shape[-1] are shape[0]"
SHAPE = "scale_scores(attention_scores(Q, K), K.shape[-1])"
JUDGED: list[tuple[str, str, str, tuple[str, ...], str]] = [
    (L1, "softmax", "x = np.asarray(x)", ("x = np.asarray(x) -> pass",), "x is always an ndarray"),
    (
        L1,
        "softmax",
        "if not np.issubdtype(x.dtype, np.floating):",
        ("if not np.issubdtype(x.dtype, np.floating): -> pass",),
        "np.exp of integers is float64 anyway",
    ),
    (
        L1,
        "softmax",
        "x = x.astype(np.float64)",
        ("x = x.astype(np.float64) -> pass",),
        "np.exp of integers is float64 anyway",
    ),
    (
        L1,
        "softmax",
        "shift = np.where(np.isfinite(shift), shift, 0.0)",
        ("0.0 -> 1.0",),
        "an all -inf slice gives exp(-inf) = 0 whatever finite shift it gets",
    ),
    (
        L1,
        "scale_scores",
        "if d_k <= 0:",
        ("if d_k <= 0: -> pass", "d_k <= 0 -> d_k < 0", "0 -> -1"),
        "d_k > 0 is a precondition of the contract, not a checked error",
    ),
    (
        L1,
        "scale_scores",
        "raise ValueError(f'd_k must be a positive width, got {d_k}')",
        ("raise ValueError(f'd_k must be a positive width, got {d_k}') -> pass",),
        "d_k > 0 is a precondition of the contract, not a checked error",
    ),
    (
        L1,
        "self_attention",
        "scores = " + SHAPE,
        ("K.shape -> W_q.shape", "K.shape -> W_k.shape"),
        "W_q and W_k are [d_in, d_k]: their last axis is K's width",
    ),
    (
        L1,
        "self_attention",
        "scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)",
        ("X.shape -> K.shape", "X.shape -> V.shape"),
        "K and V have one row per token of X",
    ),
    (
        L1,
        "embed_one_hot",
        "token_ids = np.asarray(token_ids)",
        ("token_ids = np.asarray(token_ids) -> pass",),
        "token_ids is always an ndarray",
    ),
    (
        L2,
        "softmax",
        "shift = x.amax(dim=dim, keepdim=True).detach()",
        ("x.amax(dim=dim, keepdim=True).detach() -> x.amax(dim=dim, keepdim=True)",),
        "same values; softmax is shift-invariant, so no gradient flows through the shift",
    ),
    (
        L2,
        "simple_attention_loop",
        "weights = softmax(scores, dim=-1)",
        ("-1 -> 1",),
        "scores is [T, T]: dim 1 is dim -1",
    ),
    (
        L2,
        "simple_attention_loop",
        "scores[i, j] = torch.dot(inputs[i], inputs[j])",
        ("(i, j) -> (j, i)",),
        "the dot product is symmetric and every pair is filled",
    ),
    *[
        (
            L2,
            layer,
            "weights = softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
            ("keys.shape -> queries.shape", "keys.shape -> values.shape"),
            "queries, keys and values are all d_out wide",
        )
        for layer in ("SelfAttention_v1", "SelfAttention_v2")
    ],
    (
        L2,
        "copy_v2_weights_into_v1",
        "if target.shape != linear.weight.T.shape:",
        ("if target.shape != linear.weight.T.shape: -> pass",),
        "same d_in and d_out is the caller's promise (contract), not a checked error",
    ),
    (
        L2,
        "copy_v2_weights_into_v1",
        "raise ValueError(f\"{name}: v1 holds {tuple(target.shape)} but v2's transposed "
        'weight is {tuple(linear.weight.T.shape)}; build both with the same d_in and d_out")',
        ('raise ValueError(f"{name}: v1 holds {tuple(target.shape)}... -> pass',),
        "same d_in and d_out is the caller's promise (contract), not a checked error",
    ),
    (
        L3,
        "apply_causal_mask",
        "return scores.masked_fill(causal_mask(scores.shape[-1]).to(scores.device), -torch.inf)",
        ("1 -> 2",),
        "scores is square by contract: shape[-2] is shape[-1]",
    ),
    (
        L3,
        "ScaledDotProductAttention",
        "scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5",
        ("k.shape -> q.shape",),
        "q and k are both d_k wide",
    ),
    *[
        (lesson, layer, GUARD, ("if num_tokens > self.mask.shape[0]: -> pass",), PRECONDITION)
        for lesson, layer in ((L3, "CausalAttention"), (L4, "MultiHeadAttention"))
    ],
    *[
        (lesson, layer, RAISE_T, (RAISE_CUT,), PRECONDITION)
        for lesson, layer in ((L3, "CausalAttention"), (L4, "MultiHeadAttention"))
    ],
    *[
        (lesson, layer, GUARD, ("0 -> 1", "0 -> -1"), SQUARE)
        for lesson, layer in ((L3, "CausalAttention"), (L4, "MultiHeadAttention"))
    ],
    (
        L4,
        "MultiHeadAttention",
        "scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5",
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, T, head_dim]: dim 2 is dim -2",
    ),
    (
        L5,
        "MultiHeadAttention",
        "scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5",
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, T, head_dim]: dim 2 is dim -2",
    ),
    (
        L5,
        "MultiHeadAttention",
        "self.last_weights = weights.detach()",
        ("weights.detach() -> weights",),
        "detaching changes no value, only whether the stored weights keep the graph alive",
    ),
    (
        L5,
        "MultiHeadAttention",
        "blocked = blocked | padding",
        ("blocked | padding -> padding | blocked",),
        "| is symmetric",
    ),
    (
        L5,
        "padding_causal_mask",
        "return (future[None, :, :] | padding[:, None, :])[:, None, :, :]",
        ("future[None, :, :] | padding[:, None, :] -> padding[:, None, :] | future[None, :, :]",),
        "| is symmetric",
    ),
    (
        L5,
        "TinyTransformer",
        "positions = torch.arange(ids.shape[-1], device=ids.device)",
        ("-1 -> 1",),
        "ids is [batch, T] by contract: dim 1 is dim -1",
    ),
    (
        L5,
        "softmax_jacobian_norm",
        "jacobian = torch.diag_embed(s) - s[..., :, None] * s[..., None, :]",
        (
            "torch.diag_embed(s) - s[..., :, None] * s[..., None, :] -> "
            "s[..., :, None] * s[..., None, :] - torch.diag_embed(s)",
        ),
        "the norm of -J is the norm of J",
    ),
    (
        L5,
        "softmax_jacobian_norm",
        "jacobian = torch.diag_embed(s) - s[..., :, None] * s[..., None, :]",
        ("(..., :, None) -> (:, ..., None)",),
        "s[:, ..., None] and s[..., :, None] both add a last axis, whatever the rank",
    ),
    (
        L5,
        "permutation_gap",
        "return (layer(x[:, perm]) - layer(x)[:, perm]).abs().max().item()",
        ("layer(x[:, perm]) - layer(x)[:, perm] -> layer(x)[:, perm] - layer(x[:, perm])",),
        "the absolute difference is symmetric",
    ),
]
"""Survivors a human judged equivalent: (slug, exercise, statement, changes, why)."""
KNOWN_EQUIVALENT: dict[tuple[str, str, str, str], str] = {
    (slug, exercise, statement, change): why
    for slug, exercise, statement, changes, why in JUDGED
    for change in changes
}
"""(slug, exercise, statement, change) -> why the mutant computes what the reference does."""
