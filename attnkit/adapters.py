"""The one seam between an implementation and every test that checks it.

Self-checks, hidden suites and the grader never call student code directly. They call
an *adapter* by name with plain data (NumPy arrays, numbers, strings, lists, dicts) and
get plain data back. The same adapter runs against:

* a student's notebook definitions, in the student's own process (the self-check);
* the reference implementations, in the grader's process (the expected values);
* a submission inside an isolated worker process, whose plain answer is sent back and
  compared in the grader's process, so student code never judges itself.

Every adapter takes ``ns`` (a mapping from names to the implementation's definitions)
and keyword arguments. Contract for arrays crossing the seam:

* inputs are NumPy arrays of the dtype the test wants (float32 for modules, whose
  parameters are float32; float64 where precision matters); for torch exercises they
  become tensors of the same dtype, bool arrays become bool tensors;
* every output is described by :func:`describe`, which records what the student
  returned (tensor, ndarray, number, tuple) as well as its values;
* the inputs are copied before the call and returned as ``inputs_after``, so a test can
  see whether the implementation modified its arguments in place.

Module weight layout: parameters are addressed by their ``named_parameters()`` names
(``W_query``, ``W_key``, ``W_value``, ``out_proj.weight`` ...), and ``state`` loads
values into them by those names before the forward pass.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .tensor_memory import MemoryWatch

Namespace = Mapping[str, Any]


class MissingDefinition(KeyError):
    """The implementation does not define a name the exercise asks for."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"{self.name} is not defined"


def seed_torch(seed: int) -> None:
    """Seed PyTorch's CPU generator, what ``torch.manual_seed`` does on a machine without
    an accelerator, without its lazy accelerator calls (each formats a stack: 1 ms)."""
    import torch

    torch.random.default_generator.manual_seed(seed)


def lookup(ns: Namespace, name: str) -> Any:
    try:
        return ns[name]
    except KeyError:
        raise MissingDefinition(name) from None


def describe(obj: Any) -> dict[str, Any]:
    """A plain description of a value an implementation returned."""
    torch = sys.modules.get("torch")  # a tensor exists only once PyTorch is loaded

    if torch is not None and isinstance(obj, torch.Tensor):
        data = obj.detach().cpu()
        if data.dtype == torch.bfloat16:
            data = data.float()
        return {
            "kind": "tensor",
            "dtype": str(obj.dtype).removeprefix("torch."),
            "array": np.array(data.numpy(), copy=True),
        }
    if isinstance(obj, np.ndarray):
        return {"kind": "ndarray", "dtype": str(obj.dtype), "array": np.array(obj, copy=True)}
    if isinstance(obj, bool | int | float | np.number | np.bool_):
        return {"kind": "number", "dtype": type(obj).__name__, "array": np.asarray(obj)}
    if isinstance(obj, tuple | list):
        return {"kind": "sequence", "items": [describe(item) for item in obj]}
    if obj is None:
        return {"kind": "none"}
    return {"kind": "other", "type": type(obj).__name__}


def to_torch(value: Any) -> Any:
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True))
    return value


def call_function(
    ns: Namespace,
    name: str,
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    framework: str = "numpy",
) -> dict[str, Any]:
    """Call function ``name`` with ``args``; arrays become tensors when framework == "torch"."""
    function = lookup(ns, name)
    convert: Callable[[Any], Any] = to_torch if framework == "torch" else _copy_array
    call_args = [convert(a) for a in args]
    call_kwargs = {k: convert(v) for k, v in (kwargs or {}).items()}
    out = function(*call_args, **call_kwargs)
    return {"out": describe(out), "inputs_after": [_plain_array(a) for a in call_args]}


def bounded_call(
    ns: Namespace,
    name: str,
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    framework: str = "torch",
    limit_bytes: int = 0,
) -> dict[str, Any]:
    """:func:`call_function` watched by :class:`MemoryWatch`: a tensor bigger than
    ``limit_bytes`` (or a NumPy peak above it) ends the call with a ``MemoryError``, and
    ``memory`` says what the watch saw. Detail only in the grading sandbox, where the worker's
    own limit, set from outside, decides; in-process it stands in for that limit."""
    with MemoryWatch(limit_bytes or None) as watch:
        result = call_function(ns, name, args, kwargs, framework)
    return {**result, "memory": watch.report()}


def run_module(
    ns: Namespace,
    name: str,
    init_args: list[Any],
    inputs: list[Any],
    init_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    state: dict[str, np.ndarray] | None = None,
    train: bool = False,
    forward_seed: int | None = None,
    grad_output: np.ndarray | None = None,
    keep: list[str] | None = None,
) -> dict[str, Any]:
    """Build module ``name``, optionally load ``state``, run forward (and backward).

    ``seed`` seeds torch before construction, so implementations that create their
    parameters in the documented order get the documented values. ``grad_output``
    (same shape as the output, or the first output when forward returns a tuple)
    triggers ``backward`` and returns each parameter's gradient under ``grads``.
    ``keep`` names attributes the module holds after the call (lesson 5's
    ``last_weights``), described under ``kept``; for a ModuleList ``blocks``, the name
    ``blocks.last_weights`` gives each block's, in a sequence.
    """
    import torch

    seed_torch(seed)
    module = lookup(ns, name)(*init_args, **(init_kwargs or {}))
    if state:
        load_state(module, state)
    module.train(train)
    tensors = [to_torch(x) for x in inputs]
    if forward_seed is not None:
        seed_torch(forward_seed)
    with torch.set_grad_enabled(grad_output is not None):
        out = module(*tensors)
        grads: dict[str, Any] = {}
        first = out[0] if isinstance(out, tuple | list) else out
        # Only a tensor that carries a graph can be differentiated; anything else is
        # reported through its description (wrong kind, NaN, ...) instead of a crash here.
        if grad_output is not None and isinstance(first, torch.Tensor) and first.requires_grad:
            (first * to_torch(grad_output)).sum().backward()
            grads = {
                n: None if p.grad is None else p.grad.detach().numpy().copy()
                for n, p in module.named_parameters()
            }
    return {
        "out": describe(out),
        "params": {n: p.detach().numpy().copy() for n, p in module.named_parameters()},
        "buffers": {n: b.detach().numpy().copy() for n, b in module.named_buffers()},
        "grads": grads,
        "inputs_after": [_plain_array(t) for t in tensors],
        "kept": {path: describe(_attribute(module, path)) for path in keep or []},
    }


def _attribute(module: Any, path: str) -> Any:
    """``module.a`` for ``"a"``; for ``"blocks.a"``, ``[block.a for block in module.blocks]``."""
    if "." not in path:
        return getattr(module, path, None)
    container, name = path.split(".", 1)
    return [getattr(item, name, None) for item in getattr(module, container, None) or []]


def train_step(
    ns: Namespace,
    vocab_size: int,
    width: int,
    inputs: np.ndarray,
    targets: np.ndarray,
    learning_rate: float = 0.1,
    seed: int = 0,
    name: str = "train_step",
    steps: int = 1,
) -> dict[str, Any]:
    """Call ``train_step(model, optimizer, inputs, targets)`` ``steps`` times (at most 5) on
    a model and an optimiser the kit builds (an embedding and a linear layer, plain SGD):
    the result is what the first call returned and the parameters after the last, which a
    check compares with what the reference's steps give."""
    from torch import nn

    seed_torch(seed)
    model = nn.Sequential(nn.Embedding(vocab_size, width), nn.Linear(width, vocab_size))
    optimizer = PlainSGD(list(model.parameters()), learning_rate)
    step = lookup(ns, name)
    batch = to_torch(inputs), to_torch(targets)
    returned = step(model, optimizer, *batch)
    for _ in range(min(max(steps, 1), 5) - 1):
        step(model, optimizer, *batch)
    return {
        "out": describe(returned),
        "params": {n: p.detach().numpy().copy() for n, p in model.named_parameters()},
    }


class PlainSGD:
    """Gradient descent with the two methods a training step calls, ``zero_grad`` and
    ``step``, as ``torch.optim.SGD(params, lr)`` does them. (A ``torch.optim`` optimiser
    would load PyTorch's compiler, a second, into every graded process.)"""

    def __init__(self, params: list[Any], lr: float) -> None:
        self.params, self.lr = params, lr
        self.param_groups = [{"params": params, "lr": lr}]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.zero_()

    def step(self) -> None:
        import torch

        with torch.no_grad():
            for param in self.params:
                if param.grad is not None:
                    param.add_(param.grad, alpha=-self.lr)


LAYERS = ("attention", "attention_after_positions")
"""The layers a ``layer_property`` call can hand an exercise (see below)."""


def kit_layer(layer: str, seed: int = 0) -> Callable[[Any], Any]:
    """A layer the kit builds for an exercise to probe: self-attention with the inputs as
    queries, keys and values (``"attention"``), or the same after adding a fixed position
    vector (drawn with ``seed``) to each token (``"attention_after_positions"``)."""
    import torch

    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}")

    def attention(x: Any) -> Any:
        return torch.softmax(x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5, dim=-1) @ x

    if layer == "attention":
        return attention
    positions: dict[tuple[int, int], Any] = {}

    def after_positions(x: Any) -> Any:
        shape = (x.shape[-2], x.shape[-1])
        if shape not in positions:
            positions[shape] = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
        return attention(x + positions[shape])

    return after_positions


def layer_property(
    ns: Namespace, name: str, layer: str, args: list[Any], seed: int = 0
) -> dict[str, Any]:
    """Call exercise ``name(layer, *args)`` with a layer the kit builds (see kit_layer)."""
    call_args = [to_torch(a) for a in args]
    out = lookup(ns, name)(kit_layer(layer, seed), *call_args)
    return {"out": describe(out), "inputs_after": [_plain_array(a) for a in call_args]}


def load_state(module: Any, state: Mapping[str, np.ndarray]) -> None:
    """Copy arrays into a module's parameters by name, checking each name and shape."""
    import torch

    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in state.items():
            if name not in params:
                known = ", ".join(params) or "none"
                raise MissingDefinition(f"parameter {name} (the module's parameters: {known})")
            target = params[name]
            if tuple(target.shape) != value.shape:
                raise ValueError(
                    f"parameter {name} has shape {tuple(target.shape)}, expected {value.shape}"
                )
            target.copy_(torch.from_numpy(np.array(value, copy=True)))


def transfer_weights(
    ns: Namespace,
    d_in: int,
    d_out: int,
    seed: int = 0,
    qkv_bias: bool = False,
    name: str = "copy_v2_weights_into_v1",
    v2_state: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Build a v2 and a v1, call ``copy_v2_weights_into_v1(v2, v1)``, return both states.

    ``v2_state`` (chosen by the caller) is loaded into v2 before the copy, so a check can
    compare v1 with weights it knows rather than with what the implementation reports.
    With ``qkv_bias=True`` the copy is expected to refuse; ``raised`` names the
    exception type it raised (None if it did not raise).
    """

    seed_torch(seed)
    v2 = lookup(ns, "SelfAttention_v2")(d_in, d_out, qkv_bias=qkv_bias)
    if v2_state:
        load_state(v2, v2_state)
    v1 = lookup(ns, "SelfAttention_v1")(d_in, d_out)
    copy = lookup(ns, name)
    raised = None
    if qkv_bias:
        try:
            copy(v2, v1)
        except Exception as exc:
            raised = type(exc).__name__
        return {"raised": raised}
    returned = copy(v2, v1)
    return {
        "v1": {n: p.detach().numpy().copy() for n, p in v1.named_parameters()},
        "v2": {n: p.detach().numpy().copy() for n, p in v2.named_parameters()},
        "returned_v1": returned is v1,
    }


def parameter_shapes(
    ns: Namespace, name: str, init_args: list[Any], init_kwargs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Build module ``name`` and list its parameters' shapes (no forward pass)."""
    module = lookup(ns, name)(*init_args, **(init_kwargs or {}))
    return {"shapes": {n: list(p.shape) for n, p in module.named_parameters()}}


def _copy_array(value: Any) -> Any:
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


def _plain_array(value: Any) -> Any:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    return None


ADAPTERS: dict[str, Callable[..., dict[str, Any]]] = {
    "call_function": call_function,
    "bounded_call": bounded_call,
    "run_module": run_module,
    "transfer_weights": transfer_weights,
    "parameter_shapes": parameter_shapes,
    "train_step": train_step,
    "layer_property": layer_property,
}


# -- what a reply from an untrusted implementation must look like -------------------------------


class MalformedResult(ValueError):
    """An adapter result that does not have the documented shape (a hostile or broken reply)."""


DESCRIPTION_KINDS = ("tensor", "ndarray", "number", "sequence", "none", "other")
MAX_SEQUENCE_DEPTH = 4


def _check_description(value: Any, depth: int = 0) -> None:
    if not isinstance(value, dict) or value.get("kind") not in DESCRIPTION_KINDS:
        raise MalformedResult("an output description has no known kind")
    kind = value["kind"]
    if kind in ("tensor", "ndarray", "number"):
        if not isinstance(value.get("array"), np.ndarray) or not isinstance(
            value.get("dtype"), str
        ):
            raise MalformedResult(f"a {kind} output has no array or dtype")
    elif kind == "sequence":
        items = value.get("items")
        if not isinstance(items, list) or depth >= MAX_SEQUENCE_DEPTH:
            raise MalformedResult("a sequence output is malformed or nests too deeply")
        for item in items:
            _check_description(item, depth + 1)
    elif kind == "other" and not isinstance(value.get("type", ""), str):
        raise MalformedResult("an output's type name is not text")


def _check_arrays(value: Any, what: str, allow_none: bool = False) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise MalformedResult(f"{what} is not a mapping of names to arrays")
    for item in value.values():
        if not (isinstance(item, np.ndarray) or (allow_none and item is None)):
            raise MalformedResult(f"{what} holds something that is not an array")


def _check_inputs_after(value: Any) -> None:
    if not isinstance(value, list) or not all(
        item is None or isinstance(item, np.ndarray) for item in value
    ):
        raise MalformedResult("inputs_after is not a list of arrays")


def _check_memory(value: Any) -> None:
    counts = [value.get(k) for k in ("largest", "peak")] if isinstance(value, dict) else [None]
    if not (
        all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
        and isinstance(value.get("largest_what"), str)
        and len(value["largest_what"]) <= 200
        and len(value) == 3
    ):
        raise MalformedResult("memory is not what the memory watch reports")


MAX_KERNELS = 1000
"""Kernel names a result may list (PyTorch has about 3,600 operators)."""


def validate_result(adapter: str, result: Any) -> dict[str, Any]:
    """Check that ``result`` has exactly the shape ``adapter`` documents; return it.

    Every reply from a sandboxed submission passes through here before a check reads it,
    so a forged or damaged reply fails that submission's check instead of the grader.
    """
    if not isinstance(result, dict):
        raise MalformedResult("the result is not a mapping")
    used = result.get("forbidden_used", [])
    if not isinstance(used, list) or not all(isinstance(u, str) for u in used):
        raise MalformedResult("forbidden_used is not a list of names")
    if not isinstance(result.get("forbidden_unverified", ""), str):
        raise MalformedResult("forbidden_unverified is not a reason")
    reached = result.get("kernels_reached", [])
    if not (
        isinstance(reached, list)
        and len(reached) <= MAX_KERNELS
        and all(isinstance(k, str) and 0 < len(k) <= 120 for k in reached)
    ):
        raise MalformedResult("kernels_reached is not a list of kernel names")
    if adapter in ("call_function", "bounded_call", "layer_property"):
        _check_description(result.get("out"))
        _check_inputs_after(result.get("inputs_after"))
        if adapter == "bounded_call":
            _check_memory(result.get("memory"))
    elif adapter == "run_module":
        _check_description(result.get("out"))
        _check_arrays(result.get("params"), "params")
        _check_arrays(result.get("buffers"), "buffers")
        _check_arrays(result.get("grads"), "grads", allow_none=True)
        _check_inputs_after(result.get("inputs_after"))
        kept = result.get("kept", {})
        if not isinstance(kept, dict) or not all(isinstance(k, str) for k in kept):
            raise MalformedResult("kept is not a mapping of names to outputs")
        for item in kept.values():
            _check_description(item)
    elif adapter == "train_step":
        _check_description(result.get("out"))
        _check_arrays(result.get("params"), "params")
    elif adapter == "transfer_weights":
        if "raised" in result:
            if result["raised"] is not None and not isinstance(result["raised"], str):
                raise MalformedResult("raised is not an exception name")
        else:
            _check_arrays(result.get("v1"), "v1")
            _check_arrays(result.get("v2"), "v2")
            if not isinstance(result.get("returned_v1"), bool):
                raise MalformedResult("returned_v1 is not a boolean")
    elif adapter == "parameter_shapes":
        shapes = result.get("shapes")
        if not isinstance(shapes, dict) or not all(
            isinstance(s, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in s)
            for s in shapes.values()
        ):
            raise MalformedResult("shapes is not a mapping of names to integer lists")
    else:
        raise MalformedResult(f"unknown adapter {adapter!r}")
    return result
