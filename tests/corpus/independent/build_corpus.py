"""Build the independent corpus of mistaken submissions.

Each case = the released notebook with every stub filled with a correct answer written
for this corpus, except one exercise, which gets a single plausible mistake.
Run:  .venv/bin/python tests/corpus/independent/build_corpus.py
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent

LESSONS = {
    1: "01_numpy_attention",
    2: "02_self_attention",
    3: "03_causal_attention",
    4: "04_multihead_attention",
}


def d(s: str) -> str:
    return textwrap.dedent(s).strip("\n")


# --------------------------------------------------------------------------- correct answers
GOOD: dict[int, dict[str, str]] = {1: {}, 2: {}, 3: {}, 4: {}}

GOOD[1]["softmax"] = d("""
    x = np.asarray(x)
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0).astype(x.dtype)
    shifted = np.exp(x - peak)
    total = np.sum(shifted, axis=axis, keepdims=True)
    total = np.where(total > 0, total, 1).astype(x.dtype)
    return (shifted / total).astype(x.dtype, copy=False)
""")
GOOD[1]["scale_scores"] = d("""
    scores = np.asarray(scores)
    factor = 1.0 / float(np.sqrt(d_k))
    return (scores * factor).astype(scores.dtype, copy=False)
""")
GOOD[1]["attention_scores"] = d("""
    return np.matmul(Q, np.swapaxes(K, -1, -2))
""")
GOOD[1]["causal_mask"] = d("""
    rows = np.arange(num_tokens)[:, None]
    cols = np.arange(num_tokens)[None, :]
    return cols > rows
""")
SA1_BODY = """
    Q = X @ W_q
    K = X @ W_k
    V = X @ W_v
    d_k = W_k.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if causal:
        T = X.shape[-2]
        blocked = np.triu(np.ones((T, T), dtype=bool), k=1)
        scores = np.where(blocked, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    weights = weights.astype(X.dtype)
    return (weights @ V).astype(X.dtype), weights
"""
GOOD[1]["self_attention"] = d(SA1_BODY)
GOOD[1]["embed_one_hot"] = d("""
    ids = np.asarray(token_ids)
    vocab_size = E.shape[0]
    one_hot = (ids[..., None] == np.arange(vocab_size)).astype(E.dtype)
    return one_hot @ E
""")

GOOD[2]["softmax"] = d("""
    peak = x.amax(dim=dim, keepdim=True).detach()
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    e = torch.exp(x - peak)
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))
""")
GOOD[2]["simple_attention_loop"] = d("""
    T = inputs.shape[0]
    scores = torch.zeros(T, T, dtype=inputs.dtype)
    for i in range(T):
        for j in range(T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    weights = torch.zeros(T, T, dtype=inputs.dtype)
    for i in range(T):
        weights[i] = torch.softmax(scores[i], dim=0)
    context = torch.zeros_like(inputs)
    for i in range(T):
        for j in range(T):
            context[i] += weights[i, j] * inputs[j]
    return context, weights
""")
GOOD[2]["simple_attention_matrix"] = d("""
    scores = inputs @ inputs.transpose(-2, -1)
    weights = torch.softmax(scores, dim=-1)
    return weights @ inputs, weights
""")
GOOD[2]["SelfAttention_v1"] = d("""
    queries = x @ self.W_query
    keys = x @ self.W_key
    values = x @ self.W_value
    scores = queries @ keys.transpose(-2, -1)
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ values
""")
GOOD[2]["SelfAttention_v2"] = d("""
    queries = self.W_query(x)
    keys = self.W_key(x)
    values = self.W_value(x)
    scores = torch.matmul(queries, keys.transpose(-2, -1))
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    return torch.matmul(weights, values)
""")
GOOD[2]["copy_v2_weights_into_v1"] = d("""
    for name in ("W_query", "W_key", "W_value"):
        if getattr(v2, name).bias is not None:
            raise ValueError("v2 has biases; v1 has no place for them")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    return v1
""")

GOOD[3]["causal_mask"] = d("""
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)
""")
GOOD[3]["apply_causal_mask"] = d("""
    T = scores.shape[-1]
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
    return scores.masked_fill(blocked, float("-inf"))
""")
SDPA_GOOD = """
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
        dead = mask.all(dim=-1, keepdim=True)
        scores = scores.masked_fill(dead, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(dead, 0.0)
    weights = self.dropout(weights)
    return weights @ v, weights
"""
GOOD[3]["ScaledDotProductAttention"] = d(SDPA_GOOD)
GOOD[3]["CausalAttention"] = d("""
    T = x.shape[-2]
    q = self.W_query(x)
    k = self.W_key(x)
    v = self.W_value(x)
    context, _ = self.attention(q, k, v, mask=self.mask[:T, :T])
    return context
""")

GOOD[4]["MultiHeadAttentionWrapper"] = d("""
    outputs = [head(x) for head in self.heads]
    return torch.cat(outputs, dim=-1)
""")
GOOD[4]["wrapper_d_out"] = d("""
    return 1
""")
MHA_GOOD = """
    b, T, _ = x.shape

    def split(t):
        return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

    q = split(self.W_query(x))
    k = split(self.W_key(x))
    v = split(self.W_value(x))
    scores = q @ k.transpose(2, 3) / self.head_dim ** 0.5
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
    return self.out_proj(context)
"""
GOOD[4]["MultiHeadAttention"] = d(MHA_GOOD)
GOOD[4]["gpt2_attention_parameters"] = d("""
    d = 768
    qkv = 3 * d * d          # no qkv bias
    out_proj = d * d + d     # weight and bias
    return qkv + out_proj
""")

# --------------------------------------------------------------------------- the mistakes
# (lesson, student, exercise, mistake, idiom, body)
CASES: list[tuple[int, str, str, str, str, str]] = []


def case(lesson, student, exercise, mistake, idiom, body):
    CASES.append((lesson, student, exercise, mistake, idiom, d(body)))


def variant(base: str, old: str, new: str) -> str:
    base = d(base)
    old, new = d(old), d(new)
    assert old in base, (old, base)
    return base.replace(old, new, 1)


# ---- lesson 1
case(
    1,
    "nomax",
    "softmax",
    "softmax exponentiates x directly without subtracting the max along the axis",
    "np.exp / np.sum keepdims",
    """
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
""",
)
case(
    1,
    "noguard",
    "softmax",
    "subtracts the row max but does not guard a fully -inf slice, so it yields NaN (-inf - -inf)",
    "x.max(axis, keepdims) method calls",
    """
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
)
case(
    1,
    "nokeepdims",
    "softmax",
    "sums along the axis without keepdims, so the denominator broadcasts against the wrong axis",
    "np.sum without keepdims",
    variant(
        GOOD[1]["softmax"],
        "total = np.sum(shifted, axis=axis, keepdims=True)",
        "total = np.sum(shifted, axis=axis)",
    ),
)
case(
    1,
    "hardaxis",
    "softmax",
    "ignores the axis argument and always normalises over the last axis",
    "hard-coded axis=-1",
    GOOD[1]["softmax"].replace("axis=axis", "axis=-1"),
)
case(
    1,
    "scaledk",
    "scale_scores",
    "divides the scores by d_k instead of sqrt(d_k)",
    "division by int",
    """
    scores = np.asarray(scores)
    return (scores / d_k).astype(scores.dtype, copy=False)
""",
)
case(
    1,
    "keysT",
    "attention_scores",
    "transposes K with .T, which on a batched 3-D array reverses all axes instead of swapping the last two",
    "@ with .T",
    """
    return Q @ K.T
""",
)
case(
    1,
    "einsumswap",
    "attention_scores",
    "einsum output subscripts swapped, returning K Q^T (keys as rows) instead of Q K^T",
    "np.einsum",
    """
    return np.einsum("...qd,...kd->...kq", Q, K)
""",
)
case(
    1,
    "belowdiag",
    "causal_mask",
    "blocks the wrong triangle: True strictly below the diagonal instead of above",
    "np.tril(k=-1)",
    """
    return np.tril(np.ones((num_tokens, num_tokens), dtype=bool), k=-1)
""",
)
case(
    1,
    "withdiag",
    "causal_mask",
    "uses triu with k=0, so the diagonal (a token seeing itself) is blocked too",
    "np.triu(k=0)",
    """
    return np.triu(np.ones((num_tokens, num_tokens)), k=0).astype(bool)
""",
)
case(
    1,
    "noscale",
    "self_attention",
    "forgets to scale the scores by 1/sqrt(d_k)",
    "np.matmul + swapaxes",
    variant(
        SA1_BODY,
        "scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)",
        "scores = np.matmul(Q, np.swapaxes(K, -1, -2))",
    ),
)
case(
    1,
    "sqrtdin",
    "self_attention",
    "scales by sqrt(d_in), the width of X, instead of sqrt(d_k)",
    "@ with X.shape[-1]",
    variant(
        SA1_BODY,
        "scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)",
        "scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1])",
    ),
)
case(
    1,
    "maskzero",
    "self_attention",
    "masks the future scores with 0 instead of -inf, so future keys still get weight",
    "np.where",
    variant(
        SA1_BODY,
        "scores = np.where(blocked, -np.inf, scores)",
        "scores = np.where(blocked, 0.0, scores)",
    ),
)
case(
    1,
    "maskafter",
    "self_attention",
    "applies the causal mask after softmax (zeroing weights) without renormalising the rows",
    "boolean multiply after softmax",
    d("""
    Q = X @ W_q
    K = X @ W_k
    V = X @ W_v
    d_k = W_k.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    if causal:
        T = X.shape[-2]
        allowed = np.tril(np.ones((T, T), dtype=bool))
        weights = weights * allowed
    weights = weights.astype(X.dtype)
    return (weights @ V).astype(X.dtype), weights
"""),
)
case(
    1,
    "onehotwidth",
    "embed_one_hot",
    "builds the one-hot with width max(id)+1 instead of vocab_size",
    "np.eye indexing",
    """
    ids = np.asarray(token_ids)
    one_hot = np.eye(int(ids.max()) + 1, dtype=E.dtype)[ids]
    return one_hot @ E
""",
)

# ---- lesson 2
case(
    2,
    "nomax",
    "softmax",
    "softmax exponentiates x directly without subtracting the max along dim",
    "torch.exp / sum(keepdim)",
    """
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)
""",
)
case(
    2,
    "globalmax",
    "softmax",
    "subtracts the global max of the whole tensor instead of the max along dim, so low rows underflow to 0/0",
    "x.max() over all elements",
    """
    e = torch.exp(x - x.max())
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))
""",
)
case(
    2,
    "loopcols",
    "simple_attention_loop",
    "normalises each column of the score matrix (softmax over i) instead of each row",
    "python loops",
    variant(
        GOOD[2]["simple_attention_loop"],
        """
    for i in range(T):
        weights[i] = torch.softmax(scores[i], dim=0)
""",
        """
    for j in range(T):
        weights[:, j] = torch.softmax(scores[:, j], dim=0)
""",
    ),
)
case(
    2,
    "loopoff",
    "simple_attention_loop",
    "off-by-one: the context loop runs j over range(T - 1), skipping the last token",
    "python loops",
    variant(
        GOOD[2]["simple_attention_loop"],
        """
    for i in range(T):
        for j in range(T):
            context[i] += weights[i, j] * inputs[j]
""",
        """
    for i in range(T):
        for j in range(T - 1):
            context[i] += weights[i, j] * inputs[j]
""",
    ),
)
case(
    2,
    "matT",
    "simple_attention_matrix",
    "uses inputs.T, which on a batched [B, T, d] tensor reverses all dims instead of the last two",
    "@ with .T",
    """
    scores = inputs @ inputs.T
    weights = torch.softmax(scores, dim=-1)
    return weights @ inputs, weights
""",
)
case(
    2,
    "v1noscale",
    "SelfAttention_v1",
    "forgets to divide the scores by sqrt(d_out)",
    "@ with .transpose(-2, -1)",
    variant(
        GOOD[2]["SelfAttention_v1"],
        "weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
        "weights = torch.softmax(scores, dim=-1)",
    ),
)
case(
    2,
    "v1keysT",
    "SelfAttention_v1",
    "transposes keys with .T, which is right for [T, d] but reverses all dims of a batched 3-D tensor",
    "@ with .T",
    variant(
        GOOD[2]["SelfAttention_v1"],
        "scores = queries @ keys.transpose(-2, -1)",
        "scores = queries @ keys.T",
    ),
)
case(
    2,
    "v1sqrtdin",
    "SelfAttention_v1",
    "scales the scores by sqrt(d_in) (x.shape[-1]) instead of sqrt(d_out)",
    "@ with ** 0.5",
    variant(
        GOOD[2]["SelfAttention_v1"],
        "weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
        "weights = torch.softmax(scores / x.shape[-1] ** 0.5, dim=-1)",
    ),
)
case(
    2,
    "v2noscale",
    "SelfAttention_v2",
    "forgets to divide the scores by sqrt(d_out)",
    "torch.matmul + transpose(-2, -1)",
    variant(
        GOOD[2]["SelfAttention_v2"],
        "weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
        "weights = torch.softmax(scores, dim=-1)",
    ),
)
case(
    2,
    "v2dk",
    "SelfAttention_v2",
    "divides the scores by d_out instead of sqrt(d_out)",
    "torch.matmul, division by width",
    variant(
        GOOD[2]["SelfAttention_v2"],
        "weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
        "weights = torch.softmax(scores / keys.shape[-1], dim=-1)",
    ),
)
case(
    2,
    "v2nobias",
    "SelfAttention_v2",
    "projects with x @ W.weight.T directly instead of calling the nn.Linear, silently dropping the bias",
    "manual x @ linear.weight.T",
    variant(
        GOOD[2]["SelfAttention_v2"],
        """
    queries = self.W_query(x)
    keys = self.W_key(x)
    values = self.W_value(x)
""",
        """
    queries = x @ self.W_query.weight.T
    keys = x @ self.W_key.weight.T
    values = x @ self.W_value.weight.T
""",
    ),
)
case(
    2,
    "copynoT",
    "copy_v2_weights_into_v1",
    "copies nn.Linear weights ([out, in]) into v1 without transposing them to [in, out]",
    "new nn.Parameter",
    """
    for name in ("W_query", "W_key", "W_value"):
        if getattr(v2, name).bias is not None:
            raise ValueError("v2 has biases; v1 has no place for them")
    v1.W_query = nn.Parameter(v2.W_query.weight.detach().clone())
    v1.W_key = nn.Parameter(v2.W_key.weight.detach().clone())
    v1.W_value = nn.Parameter(v2.W_value.weight.detach().clone())
    return v1
""",
)
case(
    2,
    "copynoraise",
    "copy_v2_weights_into_v1",
    "does not raise ValueError when v2 has biases, silently dropping them",
    "copy_ under no_grad with .T",
    """
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    return v1
""",
)

# ---- lesson 3
case(
    3,
    "belowdiag",
    "causal_mask",
    "blocks the wrong triangle: True strictly below the diagonal",
    "torch.tril(diagonal=-1)",
    """
    return torch.tril(torch.ones(num_tokens, num_tokens), diagonal=-1).bool()
""",
)
case(
    3,
    "withdiag",
    "causal_mask",
    "uses triu with diagonal=0, blocking the diagonal as well",
    "torch.triu(diagonal=0)",
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
""",
)
case(
    3,
    "maskzero",
    "apply_causal_mask",
    "fills the future scores with 0 instead of -inf",
    "masked_fill",
    variant(
        GOOD[3]["apply_causal_mask"],
        'return scores.masked_fill(blocked, float("-inf"))',
        "return scores.masked_fill(blocked, 0.0)",
    ),
)
case(
    3,
    "applyinv",
    "apply_causal_mask",
    "inverted mask polarity: fills -inf where the tril 'allowed' mask is True (the past) instead of the future",
    "torch.where with a tril 'allowed' mask",
    """
    T = scores.shape[-1]
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=scores.device))
    return torch.where(allowed, torch.full_like(scores, float("-inf")), scores)
""",
)
case(
    3,
    "sdpanoscale",
    "ScaledDotProductAttention",
    "forgets to scale the scores by 1/sqrt(d_k)",
    "torch.matmul + transpose(-2, -1)",
    variant(
        SDPA_GOOD,
        "scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5",
        "scores = torch.matmul(q, k.transpose(-2, -1))",
    ),
)
case(
    3,
    "sdpadk",
    "ScaledDotProductAttention",
    "divides the scores by d_k instead of sqrt(d_k)",
    "@ with .mT",
    variant(
        SDPA_GOOD,
        "scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5",
        "scores = q @ k.mT / d_k",
    ),
)
case(
    3,
    "sdpainv",
    "ScaledDotProductAttention",
    "inverted mask polarity: masked_fill where the mask is False (~mask) instead of True",
    "masked_fill(~mask)",
    variant(
        SDPA_GOOD,
        'scores = scores.masked_fill(mask, float("-inf"))',
        'scores = scores.masked_fill(~mask, float("-inf"))',
    ).replace("dead = mask.all(dim=-1, keepdim=True)", "dead = (~mask).all(dim=-1, keepdim=True)"),
)
case(
    3,
    "sdpaafter",
    "ScaledDotProductAttention",
    "applies the mask after softmax by zeroing weights, without renormalising the rows",
    "masked_fill on weights",
    """
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    weights = self.dropout(weights)
    return weights @ v, weights
""",
)
case(
    3,
    "sdpadropscores",
    "ScaledDotProductAttention",
    "applies dropout to the scores before softmax instead of to the weights",
    "nn.Dropout on scores",
    """
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
    scores = self.dropout(scores)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
        dead = mask.all(dim=-1, keepdim=True)
        scores = scores.masked_fill(dead, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(dead, 0.0)
    return weights @ v, weights
""",
)
case(
    3,
    "sdpadropout",
    "ScaledDotProductAttention",
    "applies dropout to the output (weights @ v) instead of to the weights",
    "nn.Dropout on output",
    """
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
        dead = mask.all(dim=-1, keepdim=True)
        scores = scores.masked_fill(dead, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(dead, 0.0)
    return self.dropout(weights @ v), weights
""",
)
case(
    3,
    "cainv",
    "CausalAttention",
    "inverted mask polarity: passes ~self.mask, blocking the past and keeping the future",
    "~ on the registered buffer",
    variant(
        GOOD[3]["CausalAttention"],
        "context, _ = self.attention(q, k, v, mask=self.mask[:T, :T])",
        "context, _ = self.attention(q, k, v, mask=~self.mask[:T, :T])",
    ),
)
case(
    3,
    "cashape1",
    "CausalAttention",
    "takes the token count from x.shape[1], which is d_in (not T) for an unbatched [T, d_in] input",
    "shape indexing",
    variant(GOOD[3]["CausalAttention"], "T = x.shape[-2]", "T = x.shape[1]"),
)
case(
    3,
    "caswapqk",
    "CausalAttention",
    "swaps the projections: queries from W_key and keys from W_query",
    "nn.Linear calls",
    variant(
        GOOD[3]["CausalAttention"],
        """
    q = self.W_query(x)
    k = self.W_key(x)
""",
        """
    q = self.W_key(x)
    k = self.W_query(x)
""",
    ),
)

# ---- lesson 4
case(
    4,
    "catbatch",
    "MultiHeadAttentionWrapper",
    "concatenates the heads along dim 0 (the batch) instead of the feature dim",
    "torch.cat(dim=0)",
    """
    return torch.cat([head(x) for head in self.heads], dim=0)
""",
)
case(
    4,
    "stackinterleave",
    "MultiHeadAttentionWrapper",
    "stacks heads on a new last dim and flattens, interleaving head features instead of concatenating head 0 first",
    "torch.stack(dim=-1).flatten",
    """
    return torch.stack([head(x) for head in self.heads], dim=-1).flatten(start_dim=-2)
""",
)
case(
    4,
    "totaldout",
    "wrapper_d_out",
    "returns the total output width 2 instead of the per-head d_out 1",
    "literal",
    """
    return 2
""",
)
case(
    4,
    "viewsplit",
    "MultiHeadAttention",
    "splits heads with view(b, heads, T, head_dim) directly instead of view(b, T, heads, head_dim).transpose(1, 2)",
    "view in the wrong order",
    variant(
        MHA_GOOD,
        """
    def split(t):
        return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
""",
        """
    def split(t):
        return t.view(b, self.num_heads, T, self.head_dim)
""",
    ).replace(
        "context = (weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)",
        "context = (weights @ v).contiguous().view(b, T, self.d_out)",
    ),
)
case(
    4,
    "mergenoT",
    "MultiHeadAttention",
    "merges heads with view(b, T, d_out) straight from [b, heads, T, head_dim] without transposing back",
    "reshape without transpose",
    variant(
        MHA_GOOD,
        "context = (weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)",
        "context = (weights @ v).reshape(b, T, self.d_out)",
    ),
)
case(
    4,
    "noout",
    "MultiHeadAttention",
    "forgets to apply out_proj after merging the heads",
    "return merged context",
    variant(MHA_GOOD, "return self.out_proj(context)", "return context"),
)
case(
    4,
    "scaledout",
    "MultiHeadAttention",
    "scales by sqrt(d_out) instead of sqrt(head_dim)",
    "** 0.5",
    variant(
        MHA_GOOD,
        "scores = q @ k.transpose(2, 3) / self.head_dim ** 0.5",
        "scores = q @ k.transpose(2, 3) / self.d_out ** 0.5",
    ),
)
case(
    4,
    "noscale",
    "MultiHeadAttention",
    "forgets to scale the scores (head split written with permute)",
    "permute + torch.matmul",
    variant(
        MHA_GOOD,
        """
    def split(t):
        return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
""",
        """
    def split(t):
        return t.view(b, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
""",
    ).replace(
        "scores = q @ k.transpose(2, 3) / self.head_dim ** 0.5",
        "scores = torch.matmul(q, k.permute(0, 1, 3, 2))",
    ),
)
case(
    4,
    "mhainv",
    "MultiHeadAttention",
    "inverted mask polarity: masked_fill where the mask is False (~mask)",
    "masked_fill(~mask)",
    variant(
        MHA_GOOD,
        'scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))',
        'scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))',
    ),
)
case(
    4,
    "hardheads",
    "MultiHeadAttention",
    "hard-codes 2 heads in the split view (the demo's num_heads) instead of self.num_heads",
    "view(b, T, 2, -1)",
    variant(
        MHA_GOOD,
        "return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)",
        "return t.view(b, T, 2, -1).transpose(1, 2)",
    ),
)
case(
    4,
    "dropctx",
    "MultiHeadAttention",
    "applies dropout to the context vectors instead of to the attention weights",
    "nn.Dropout on context",
    variant(
        MHA_GOOD,
        """
    weights = self.dropout(torch.softmax(scores, dim=-1))
    context = (weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
""",
        """
    weights = torch.softmax(scores, dim=-1)
    context = self.dropout(weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
""",
    ),
)
case(
    4,
    "softdim2",
    "MultiHeadAttention",
    "softmax over dim=2 (the query axis of [b, h, T, T]) instead of the key axis",
    "torch.softmax(dim=2)",
    variant(
        MHA_GOOD,
        "weights = self.dropout(torch.softmax(scores, dim=-1))",
        "weights = self.dropout(torch.softmax(scores, dim=2))",
    ),
)
case(
    4,
    "nooutbias",
    "gpt2_attention_parameters",
    "counts out_proj as 768*768 without its bias",
    "arithmetic",
    """
    return 4 * 768 * 768
""",
)


def fill(cell_src: str, body: str) -> str:
    lines = cell_src.split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "# YOUR CODE HERE":
            indent = line[: len(line) - len(line.lstrip())]
            assert lines[i + 1].strip() == "raise NotImplementedError()"
            out.extend((indent + b) if b.strip() else "" for b in body.split("\n"))
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def build(lesson: int, override: dict[str, str]) -> dict:
    slug = LESSONS[lesson]
    from attnkit_autograder.authoring.released import released_path

    nb = json.loads(released_path(slug, ROOT / "assignments").read_text())
    seen = set()
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("solution"):
            gid = meta["grade_id"]
            body = override.get(gid, GOOD[lesson][gid])
            src = fill("".join(cell["source"]), body)
            cell["source"] = src.splitlines(keepends=True)
            seen.add(gid)
    assert seen == set(GOOD[lesson]), (seen, set(GOOD[lesson]))
    assert set(override) <= seen
    return nb


def toml_str(s: str) -> str:
    return json.dumps(s)


def judged() -> dict[str, list[str]]:
    """The ``accept`` ids already judged for each file: kept when the manifest is rewritten
    (the judgments are made after grading, by reading the catalogue; see measure.py)."""
    import tomllib

    path = HERE / "manifest.toml"
    if not path.is_file():
        return {}
    cases = tomllib.loads(path.read_text()).get("case", [])
    return {c["file"]: c["accept"] for c in cases if "accept" in c}


def main() -> None:
    accepted = judged()
    manifest = ["# Independent corpus of mistaken submissions; one mistake per notebook.", ""]
    names = set()
    for lesson, student, exercise, mistake, idiom, body in CASES:
        slug = LESSONS[lesson]
        fname = f"{student}_{slug}.ipynb"
        assert (lesson, fname) not in names
        names.add((lesson, fname))
        nb = build(lesson, {exercise: body})
        out = HERE / slug / fname
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        manifest += [
            "[[case]]",
            f"file = {toml_str(f'{slug}/{fname}')}",
            f"lesson = {toml_str(slug)}",
            f"exercise = {toml_str(exercise)}",
            f"mistake = {toml_str(mistake)}",
            f"idiom = {toml_str(idiom)}",
            *(
                [f"accept = [{', '.join(toml_str(i) for i in accepted[key])}]"]
                if (key := f"{slug}/{fname}") in accepted
                else []
            ),
            "",
        ]
    (HERE / "manifest.toml").write_text("\n".join(manifest))
    # all-correct controls (not part of the corpus): written outside the corpus folder
    import sys

    if "--controls" in sys.argv:
        ctl = Path(sys.argv[sys.argv.index("--controls") + 1])
        ctl.mkdir(parents=True, exist_ok=True)
        for lesson, slug in LESSONS.items():
            (ctl / f"control_{slug}.ipynb").write_text(
                json.dumps(build(lesson, {}), indent=1) + "\n"
            )
    print(len(CASES), "cases")


if __name__ == "__main__":
    main()
