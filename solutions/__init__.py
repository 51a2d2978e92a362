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
* :mod:`.inference`           lesson 6: the KV cache, chunked prefill, sliding windows,
  grouped-query attention, rotary positions and cached generation
* :mod:`.flash_attention`     lesson 7: the online softmax, tiled attention and its backward

These are instructor material: they never ship in the student bundle.
"""

import importlib
from typing import Any

# Each name is imported from its module when first asked for: importing one module of the
# package (the hint ladder's lesson-1 reference, say) then never loads PyTorch.
_HOMES = {
    "CausalAttention": "causal_attention",
    "MultiHeadAttention": "multihead_attention",
    "MultiHeadAttentionWrapper": "multihead_attention",
    "gpt2_attention_parameters": "multihead_attention",
    "wrapper_d_out": "multihead_attention",
    "ScaledDotProductAttention": "scaled_dot_product",
    "apply_causal_mask": "scaled_dot_product",
    "causal_mask": "scaled_dot_product",
    "SelfAttention_v1": "self_attention",
    "SelfAttention_v2": "self_attention",
    "copy_v2_weights_into_v1": "self_attention",
    "simple_attention_loop": "simple_attention",
    "simple_attention_matrix": "simple_attention",
    "softmax": "simple_attention",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)


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
