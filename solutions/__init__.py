"""Reference implementations of every exercise in attention-kit (import name ``attnkit_solutions``).

One module per idea, in teaching order:

* :mod:`.numpy_attention`     lesson 1: softmax, scaling, scores, masks and embeddings in NumPy
* :mod:`.simple_attention`    lesson 2: torch softmax, attention without trainable weights
* :mod:`.self_attention`      lesson 2: SelfAttention_v1 / v2 and the weight transfer
* :mod:`.scaled_dot_product`  lesson 3: the causal mask and scaled dot-product attention
* :mod:`.causal_attention`    lesson 3: CausalAttention
* :mod:`.multihead_attention` lesson 4: the multi-head wrapper and fused multi-head attention
* :mod:`.tiny_transformer`    lesson 5: a tiny transformer around lesson 4's layer, trained
* :mod:`.attention_heads`     lesson 5: head detectors, padding masks, scaling, positions
* :mod:`.flash_attention`     lesson 7: the online softmax, tiled attention and its backward

These are instructor material: they never ship in the student bundle.
"""

from .causal_attention import CausalAttention
from .multihead_attention import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    gpt2_attention_parameters,
    wrapper_d_out,
)
from .scaled_dot_product import ScaledDotProductAttention, apply_causal_mask, causal_mask
from .self_attention import SelfAttention_v1, SelfAttention_v2, copy_v2_weights_into_v1
from .simple_attention import simple_attention_loop, simple_attention_matrix, softmax

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "ScaledDotProductAttention",
    "SelfAttention_v1",
    "SelfAttention_v2",
    "apply_causal_mask",
    "causal_mask",
    "copy_v2_weights_into_v1",
    "gpt2_attention_parameters",
    "simple_attention_loop",
    "simple_attention_matrix",
    "softmax",
    "wrapper_d_out",
]
