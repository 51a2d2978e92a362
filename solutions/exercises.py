"""Which reference answers which exercise.

``REFERENCE_CODE[(slug, exercise)]`` names the function or method whose *body* is the
answer to the exercise's stub. The bodies use only names that the lesson's notebook
also defines (np, torch, nn, and the lesson's earlier exercises under the same names),
so a body pasted into a released notebook's stub works there unchanged. The kit's own
tests rely on that to build correct submissions from the released notebooks.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

REFERENCE_CODE: dict[tuple[str, str], str] = {
    ("01_numpy_attention", "softmax"): "numpy_attention:softmax",
    ("01_numpy_attention", "scale_scores"): "numpy_attention:scale_scores",
    ("01_numpy_attention", "attention_scores"): "numpy_attention:attention_scores",
    ("01_numpy_attention", "causal_mask"): "numpy_attention:causal_mask",
    ("01_numpy_attention", "self_attention"): "numpy_attention:self_attention",
    ("01_numpy_attention", "embed_one_hot"): "numpy_attention:embed_one_hot",
    ("02_self_attention", "softmax"): "simple_attention:softmax",
    ("02_self_attention", "simple_attention_loop"): "simple_attention:simple_attention_loop",
    ("02_self_attention", "simple_attention_matrix"): "simple_attention:simple_attention_matrix",
    ("02_self_attention", "SelfAttention_v1"): "self_attention:SelfAttention_v1.forward",
    ("02_self_attention", "SelfAttention_v2"): "self_attention:SelfAttention_v2.forward",
    ("02_self_attention", "copy_v2_weights_into_v1"): "self_attention:copy_v2_weights_into_v1",
    ("03_causal_attention", "causal_mask"): "scaled_dot_product:causal_mask",
    ("03_causal_attention", "apply_causal_mask"): "scaled_dot_product:apply_causal_mask",
    ("03_causal_attention", "ScaledDotProductAttention"): (
        "scaled_dot_product:ScaledDotProductAttention.forward"
    ),
    ("03_causal_attention", "CausalAttention"): "causal_attention:CausalAttention.forward",
    ("04_multihead_attention", "MultiHeadAttentionWrapper"): (
        "multihead_attention:MultiHeadAttentionWrapper.forward"
    ),
    ("04_multihead_attention", "MultiHeadAttention"): (
        "multihead_attention:MultiHeadAttention.forward"
    ),
    ("04_multihead_attention", "wrapper_d_out"): "multihead_attention:wrapper_d_out",
    ("04_multihead_attention", "gpt2_attention_parameters"): (
        "multihead_attention:gpt2_attention_parameters"
    ),
}

# The reference modules whose names make up each assignment's namespace, later ones
# winning. Lesson 1 is NumPy-only, so its softmax and causal_mask are the NumPy ones.
ASSIGNMENT_MODULES: dict[str, tuple[str, ...]] = {
    "01_numpy_attention": ("numpy_attention",),
    "02_self_attention": ("simple_attention", "self_attention"),
    "03_causal_attention": ("scaled_dot_product", "causal_attention"),
    "04_multihead_attention": ("scaled_dot_product", "causal_attention", "multihead_attention"),
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def reference_object(slug: str, exercise: str) -> Any:
    """The function or method that answers ``exercise``."""
    module_name, qualname = REFERENCE_CODE[(slug, exercise)].split(":")
    target: Any = _module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def reference_namespace(slug: str) -> dict[str, Any]:
    """Every public name of the assignment's reference modules, as one namespace."""
    namespace: dict[str, Any] = {}
    for module_name in ASSIGNMENT_MODULES[slug]:
        module = _module(module_name)
        namespace.update({n: getattr(module, n) for n in module.__all__})
    return namespace
