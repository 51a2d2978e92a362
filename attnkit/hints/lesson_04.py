"""The hint ladder's words for lesson 4, multi-head attention."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

EXERCISES = {
    "MultiHeadAttentionWrapper": ExerciseHints(
        idea=(
            "Several independent heads look at the same x; their outputs are joined along "
            "the feature axis, head 0 first, so each token's vector holds every head's view."
        ),
        look="Look at the order you join the heads in, and along which axis.",
    ),
    "wrapper_d_out": ExerciseHints(
        idea=(
            "The wrapper's output width is the number of heads times each head's d_out. "
            "Work backwards from the width you want."
        ),
        look="Write the output width as heads x d_out and solve for d_out.",
    ),
    "MultiHeadAttention": ExerciseHints(
        idea=(
            "One projection per role for all heads at once, then split its width into "
            "[heads, head_dim] and move the head axis before the tokens, so each head "
            "attends on its own. Scale by sqrt(head_dim), merge the heads back in the same "
            "order, and end with out_proj."
        ),
        look=(
            "Print the shape after every step: the split (view, then transpose), the "
            "scores, the merge (transpose back, then reshape), and the final projection."
        ),
    ),
    "gpt2_attention_parameters": ExerciseHints(
        idea=(
            "Count what the layer learns: three d_in x d_out projection matrices (no bias "
            "here), and the output projection with its weight and its bias."
        ),
        look="Add the parts one by one; check against sum(p.numel() for p in layer.parameters()).",
    ),
}

# No line is pointed at in this lesson: its mistakes' lines are not yet checked by hand
# against a corpus (the precision rule), so its words say where to look.
MISTAKES: dict[tuple[str, str], MistakeHints] = {
    ("MultiHeadAttentionWrapper", "heads_in_wrong_order"): MistakeHints(
        idea=(
            "The heads' outputs are joined in head order: head 0's features first, then head 1's."
        ),
        look="Look at the order of the heads you concatenate.",
    ),
    ("MultiHeadAttentionWrapper", "concatenated_along_tokens"): MistakeHints(
        idea=(
            "Each head adds features to every token; the number of tokens stays the same. "
            "The heads are joined along the last axis."
        ),
        look="Look at the axis you concatenate along.",
    ),
    ("MultiHeadAttentionWrapper", "concatenated_along_batch"): MistakeHints(
        idea=(
            "Each head adds features to every token of every sequence: neither the batch "
            "nor the tokens grow, the features do."
        ),
        look="Look at the axis you concatenate along.",
    ),
    ("wrapper_d_out", "total_width"): MistakeHints(
        idea=(
            "The wrapper's output width is the number of heads times each head's d_out; the"
            " answer is the per-head width."
        ),
        look="Work backwards from the output width you want, divided among the heads.",
    ),
    ("MultiHeadAttention", "view_without_transpose"): MistakeHints(
        idea=(
            "view only reinterprets the last axis as [heads, head_dim]; to let each head "
            "attend on its own, the heads axis must then move in front of the tokens."
        ),
        look="Look at the step that splits the heads: is it followed by a transpose?",
    ),
    ("MultiHeadAttention", "heads_merged_without_transpose"): MistakeHints(
        idea=(
            "Merging undoes the split in reverse order: move the tokens back in front of "
            "the heads, then reshape to d_out."
        ),
        look="Look at the step that merges the heads.",
    ),
    ("MultiHeadAttention", "out_proj_missing"): MistakeHints(
        idea=(
            "After the heads are merged, the output projection mixes what they found: the "
            "layer ends with out_proj."
        ),
        look="Look at what forward returns.",
    ),
    ("MultiHeadAttention", "scale_by_d_out"): MistakeHints(
        idea=(
            "Each head compares queries and keys of width head_dim = d_out / num_heads, so "
            "that is the width to scale by."
        ),
        look="Look at the width you scale the scores by.",
    ),
    ("MultiHeadAttention", "qkv_bias_ignored"): MistakeHints(
        idea=(
            "Calling a Linear layer adds its bias when it has one; multiplying by its "
            "weight yourself leaves it out."
        ),
        look="Look at how you apply the projections.",
    ),
    ("MultiHeadAttention", "hard_coded_heads"): MistakeHints(
        idea=(
            "The layer must work for any number of heads it is built with: every size comes"
            " from the constructor."
        ),
        look="Look for a number written into forward instead of self.num_heads or self.head_dim.",
    ),
    ("MultiHeadAttention", "no_scaling"): MistakeHints(
        idea=("Divide each head's scores by sqrt(head_dim) before softmax."),
        look="Look at the scores you hand to softmax: are they scaled?",
    ),
    ("MultiHeadAttention", "divide_by_dk"): MistakeHints(
        idea=(
            "The scale is the standard deviation of a dot product, sqrt(head_dim), not head_dim."
        ),
        look="Look at how the scores are scaled.",
    ),
    ("MultiHeadAttention", "inverted_mask"): MistakeHints(
        idea=(
            "True means blocked, and the mask buffer already has that polarity: the "
            "positions where it is True become -inf."
        ),
        look="Look at how the mask decides which scores become -inf.",
    ),
    ("MultiHeadAttention", "queries_keys_swapped"): MistakeHints(
        idea=(
            "Row i of the scores belongs to query i: the queries come from W_query, the "
            "keys from W_key."
        ),
        look="Look at which projection makes your queries and which your keys.",
    ),
    ("MultiHeadAttention", "softmax_wrong_dim"): MistakeHints(
        idea=("Each query's weights must sum to 1 over the keys: the last axis of the scores."),
        look="Look at the dim you give softmax.",
    ),
    ("MultiHeadAttention", "dropout_on_output"): MistakeHints(
        idea=(
            "Attention dropout acts on the weights, the query-key connections, before they "
            "multiply the values."
        ),
        look="Look at which tensor goes through dropout.",
    ),
    ("gpt2_attention_parameters", "out_proj_bias_forgotten"): MistakeHints(
        idea=(
            "out_proj is a Linear layer with a bias: d_out more parameters on top of its "
            "weight matrix."
        ),
        look="Look at your count for out_proj.",
    ),
}
