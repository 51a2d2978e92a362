"""The hint ladder's words for lesson 7, FlashAttention on a CPU."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

EXERCISES = {
    "online_softmax": ExerciseHints(
        idea=(
            "Softmax is unchanged by a shift, so a row can be read in blocks keeping two "
            "numbers: m, the largest score so far, and l, the sum of exp(s - m). When a block "
            "raises the maximum, the old sum is rescaled by exp(m_old - m_new). At the end "
            "each weight is exp(s - m) / l."
        ),
        look=(
            "Print m and l after each block for a row of 7 scores in blocks of 3, and "
            "compare the final l with the sum of exp(s - max(s))."
        ),
    ),
    "flash_attention": ExerciseHints(
        idea=(
            "The online softmax, tile by tile: per query row a running maximum m, sum l and "
            "output acc. acc is made of the same exp(s - m) terms as l, so it is rescaled "
            "the same way. Each row's output is acc / l, and its log-sum-exp is m + log(l). "
            "No more than one tile of scores exists at a time."
        ),
        look=(
            "Compare with the naive attention on small shapes that the blocks do not "
            "divide, causal and not, with fewer queries than keys: the first case that "
            "differs tells you which detail to read."
        ),
    ),
    "flash_attention_backward": ExerciseHints(
        idea=(
            "Each tile's weights are recomputed as P = exp(S - lse). Then dV = P^T dO, "
            "dP = dO V^T, dS = P * (dP - D) with D = rowsum(dO * out) one number per query, "
            "and dQ, dK follow from dS through the scaled product q k^T / sqrt(d). Each "
            "tile adds its share."
        ),
        look=(
            "Compare dq, dk and dv with autograd of the naive attention on a small input: "
            "which of the three differ, and by what factor?"
        ),
    ),
}

# No line is pointed at in this lesson: its mistakes' lines are not yet checked by hand
# against a corpus (the precision rule), so its words say where to look.
MISTAKES: dict[tuple[str, str], MistakeHints] = {
    ("online_softmax", "sum_not_rescaled"): MistakeHints(
        idea=(
            "The old terms of the sum were exp(s - m_old). When the maximum grows they must "
            "become exp(s - m_new), so the old sum is multiplied by exp(m_old - m_new) before "
            "the new block's terms are added."
        ),
        look="Look at how the running sum is updated when a block raises the maximum.",
    ),
    ("online_softmax", "tail_block_dropped"): MistakeHints(
        idea=(
            "The row's length need not be a multiple of block: the last block is shorter, "
            "and its scores count in the maximum and the sum like every other."
        ),
        look="Look at where your loop over the blocks stops.",
    ),
    ("flash_attention", "not_rescaled"): MistakeHints(
        idea=(
            "l and acc hold terms exp(s - m_old). When a tile raises the maximum, both are "
            "multiplied by exp(m_old - m_new) before the tile's own terms are added."
        ),
        look="Look at how l and acc are updated when a tile raises the maximum.",
    ),
    ("flash_attention", "output_not_rescaled"): MistakeHints(
        idea=(
            "acc is made of the same exp(s - m) terms as l: whatever rescales l when the "
            "maximum grows rescales acc too, row by row."
        ),
        look="Look at the update of acc next to the update of l.",
    ),
    ("flash_attention", "tail_dropped"): MistakeHints(
        idea=(
            "T_q and T_k need not be multiples of the blocks: the last tile of each axis is "
            "smaller, and its queries and keys count like every other."
        ),
        look="Look at where your loops over the query and key blocks stop.",
    ),
    ("flash_attention", "causal_top_left"): MistakeHints(
        idea=(
            "The queries are the last T_q positions: query i sits at i + T_k - T_q and may "
            "see every key up to there. Lesson 3's mask is the case T_q = T_k."
        ),
        look="Look at the position you give query i in the causal mask and in the tile skip.",
    ),
    ("flash_attention", "lse_without_max"): MistakeHints(
        idea=(
            "l is the sum of exp(s - m), not of exp(s). The log-sum-exp undoes that shift: "
            "log(sum exp(s)) = m + log(l)."
        ),
        look="Look at how you compute lse from m and l.",
    ),
    ("flash_attention", "materialised"): MistakeHints(
        idea=(
            "The point of tiling is memory: the whole T_q x T_k score matrix never exists. "
            "Only one block_q x block_k tile of scores is built at a time, and each query "
            "row keeps its running maximum, sum and output."
        ),
        look="Look for a product of q with all the keys at once.",
    ),
    ("flash_attention", "reads_past_end"): MistakeHints(
        idea=(
            "Past the end of k there are no keys. A key of zeros is not nothing: its score "
            "of 0 takes weight in softmax. The last tile is simply shorter."
        ),
        look="Look at how you make the last key tile: is it filled up to block_k?",
    ),
    ("flash_attention_backward", "no_delta"): MistakeHints(
        idea=(
            "The Jacobian of softmax is diag(P) - P P^T. Its second term gives one number per "
            "query row, D = rowsum(P * dP) = rowsum(dO * out), subtracted from dP before "
            "multiplying by P."
        ),
        look="Look at how dS is computed from P and dP.",
    ),
    ("flash_attention_backward", "grads_unscaled"): MistakeHints(
        idea=(
            "The scores are q k^T / sqrt(d). The chain rule through that division divides "
            "the gradients of q and k by sqrt(d) as well."
        ),
        look="Look at dq and dk: where does the scale of the scores come in?",
    ),
}
