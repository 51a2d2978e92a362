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

import functools
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
            # On the autograd graph (a result of a graph, or a leaf that requires grad).
            "attached": bool(obj.requires_grad),
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
    optimizer = kit_sgd(list(model.parameters()), learning_rate)
    step = lookup(ns, name)
    batch = to_torch(inputs), to_torch(targets)
    returned = step(model, optimizer, *batch)
    for _ in range(min(max(steps, 1), 5) - 1):
        step(model, optimizer, *batch)
    return {
        "out": describe(returned),
        "params": {n: p.detach().numpy().copy() for n, p in model.named_parameters()},
        "inputs_after": [_plain_array(t) for t in batch],
    }


def kit_sgd(params: list[Any], lr: float) -> Any:
    """The optimiser the contract promises: a ``torch.optim.Optimizer`` doing plain
    gradient descent, as ``torch.optim.SGD(params, lr)`` does, ``step(closure)`` included.
    It is made without ``Optimizer.__init__``, whose step hooks would load PyTorch's compiler
    (seconds) into every graded process; the rest of the interface is the base class's."""
    import collections

    import torch

    class KitSGD(torch.optim.Optimizer):
        def __init__(self, params: list[Any], lr: float) -> None:
            self.defaults = {"lr": lr}
            self.param_groups = [{"params": list(params), "lr": lr}]
            self.state = collections.defaultdict(dict)
            for hooks in (
                "_optimizer_step_pre_hooks",
                "_optimizer_step_post_hooks",
                "_optimizer_state_dict_pre_hooks",
                "_optimizer_state_dict_post_hooks",
                "_optimizer_load_state_dict_pre_hooks",
                "_optimizer_load_state_dict_post_hooks",
            ):
                setattr(self, hooks, collections.OrderedDict())

        def zero_grad(self, set_to_none: bool = True) -> None:
            for group in self.param_groups:
                for param in group["params"]:
                    if set_to_none:
                        param.grad = None
                    elif param.grad is not None:
                        param.grad.zero_()

        def step(self, closure: Any = None) -> Any:
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            with torch.no_grad():
                for group in self.param_groups:
                    for param in group["params"]:
                        if param.grad is not None:
                            param.add_(param.grad, alpha=-group["lr"])
            return loss

    return KitSGD(params, lr)


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


# -- lesson 6: a cache, a layer or a model driven over several calls --------------------------


REFUSAL = "ValueError"
"""The exception a lesson-6 cache raises when new tokens do not fit. A step that raises it
reports only that (its wording is whoever wrote the cache's own: two correct caches refuse
alike), and the next steps go on; any other exception ends the call, as in every adapter."""


def _stored(cache: Any) -> Any:
    """The shape of what a cache stores (its ``keys``), as an int64 array, or None."""
    torch = sys.modules.get("torch")
    keys = getattr(cache, "keys", None)
    if torch is not None and isinstance(keys, torch.Tensor):
        return np.array(list(keys.shape), dtype=np.int64)
    return None


def cache_steps(
    ns: Namespace,
    name: str,
    init_args: list[Any],
    steps: list[dict[str, Any]],
    init_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build cache ``name`` and drive it through ``steps``, in order: ``{"keys": k,
    "values": v}`` calls it with those arrays, ``{"reset": True}`` calls its ``reset()``.
    Each step reports what came back (``out``), or that it refused the tokens (``raised``:
    :data:`REFUSAL`), the keys and values it was given as the call left them
    (``keys_after``, ``values_after``), then the cache's ``position`` and the shape of what
    it stores (``stored``, its ``keys``)."""
    import torch

    cache = lookup(ns, name)(*init_args, **(init_kwargs or {}))
    reports = []
    with torch.no_grad():
        for step in steps:
            report: dict[str, Any] = {"out": {"kind": "none"}, "raised": None}
            try:
                if step.get("reset"):
                    cache.reset()
                else:
                    keys, values = to_torch(step["keys"]), to_torch(step["values"])
                    try:
                        report["out"] = describe(cache(keys, values))
                    finally:  # the new tokens as the call left them ("not modified")
                        report["keys_after"] = _plain_array(keys)
                        report["values_after"] = _plain_array(values)
            except ValueError:
                report["raised"] = REFUSAL
            report["position"] = describe(getattr(cache, "position", None))
            report["stored"] = _stored(cache)
            reports.append(report)
    return {"steps": reports}


def _cache_tensors(caches: list[Any]) -> int:
    """Bytes of the tensors the caches hold as ``keys`` and ``values``."""
    torch = sys.modules.get("torch")
    total = 0
    for cache in caches:
        for attribute in ("keys", "values"):
            tensor = getattr(cache, attribute, None)
            if torch is not None and isinstance(tensor, torch.Tensor):
                total += tensor.numel() * tensor.element_size()
    return total


def decode(
    ns: Namespace,
    name: str,
    init_args: list[Any],
    chunks: list[np.ndarray],
    init_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    state: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Build layer or model ``name`` (seeded, ``state`` loaded, in eval mode) and feed it
    ``chunks`` one after the other with a cache: a layer (lesson 6's attention) gets
    ``cache = layer.new_cache(batch)`` and is called ``layer(chunk, cache)``; a model gets
    ``model.start_caches(batch)`` and is called ``model(chunk, use_cache=True)``. Then the
    chunks together, in one call without a cache (``full``). Reports each chunk's output,
    the first cache's ``position`` and stored shape after each chunk, and the bytes every
    cache holds at the end (``cache_bytes``)."""
    import torch

    seed_torch(seed)
    module = lookup(ns, name)(*init_args, **(init_kwargs or {}))
    if state:
        load_state(module, state)
    module.eval()
    tensors = [to_torch(chunk) for chunk in chunks]
    batch = int(tensors[0].shape[0])
    outs, positions, stored = [], [], []
    with torch.no_grad():
        if hasattr(module, "start_caches"):
            module.start_caches(batch)
            caches = list(module.caches)

            def step(chunk: Any) -> Any:
                return module(chunk, use_cache=True)
        else:
            caches = [module.new_cache(batch)]

            def step(chunk: Any) -> Any:
                return module(chunk, caches[0])

        for chunk in tensors:
            outs.append(describe(step(chunk)))
            positions.append(describe(getattr(caches[0], "position", None)))
            stored.append(_stored(caches[0]))
        full = describe(module(torch.cat(tensors, dim=1)))
    return {
        "chunks": outs,
        "full": full,
        "positions": positions,
        "stored": stored,
        "cache_bytes": np.array(_cache_tensors(caches), dtype=np.int64),
        "inputs_after": [_plain_array(t) for t in tensors],
    }


def generation(
    ns: Namespace,
    init_args: list[Any],
    prompts: list[np.ndarray],
    max_new_tokens: int,
    init_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    state: dict[str, np.ndarray] | None = None,
    name: str = "generate",
    model: str = "TinyDecoder",
) -> dict[str, Any]:
    """Build ``model`` (seeded, ``state`` loaded, eval mode) and call ``name(model, prompt,
    max_new_tokens)`` on each prompt in turn, with the same model: each run reports what
    came back (or that a cache refused, :data:`REFUSAL`) and how many tokens each call of
    the model was fed (``fed``). Then, for each run, greedy decoding without any cache,
    checked in one pass (``uncached``, see :func:`teacher_forced`)."""
    import torch

    seed_torch(seed)
    built = lookup(ns, model)(*init_args, **(init_kwargs or {}))
    if state:
        load_state(built, state)
    built.eval()
    step = lookup(ns, name)
    tensors = [to_torch(prompt) for prompt in prompts]
    runs, uncached = [], []
    with torch.no_grad():
        for prompt in tensors:
            fed: list[int] = []

            def count(_module: Any, args: tuple[Any, ...], fed: list[int] = fed) -> None:
                first = args[0] if args else None
                fed.append(int(first.shape[-1]) if isinstance(first, torch.Tensor) else -1)

            hook = built.register_forward_pre_hook(count)
            run: dict[str, Any] = {"out": {"kind": "none"}, "raised": None}
            returned = None
            try:
                returned = step(built, prompt, max_new_tokens)
                run["out"] = describe(returned)
            except ValueError:  # a cache refused: the other prompts go on
                run["raised"] = REFUSAL
            finally:
                hook.remove()
            run["fed"] = np.array(fed, dtype=np.int64)
            runs.append(run)
            uncached.append(teacher_forced(built, prompt, returned))
    return {
        "runs": runs,
        "uncached": uncached,
        "inputs_after": [_plain_array(t) for t in tensors],
    }


def teacher_forced(model: Any, prompt: Any, returned: Any) -> dict[str, Any]:
    """Greedy decoding without a cache, in one pass over the ids ``returned`` (when they are
    the prompt followed by new token ids): the model fed them whole, with no cache, gives at
    each position the logits uncached generation would choose the next token from, having
    chosen those ids so far. So the ids are exactly uncached greedy decoding's if and only
    if each new one is the argmax there. Reports those ids (the prompt, then each argmax)
    and logits [batch, new tokens, vocab], or nothing for ids that are not such a sequence."""
    import torch

    ids = returned[0] if isinstance(returned, tuple | list) and len(returned) == 2 else None
    start = int(prompt.shape[1])
    vocab = getattr(getattr(model, "token_embedding", None), "num_embeddings", 0)
    if not (
        isinstance(ids, torch.Tensor)
        and ids.dtype == torch.int64
        and ids.dim() == 2
        and ids.shape[0] == prompt.shape[0]
        and ids.shape[1] > start
        and int(ids.min()) >= 0
        and int(ids.max()) < vocab
    ):
        return {"kind": "none"}
    logits = model(ids[:, :-1])[:, start - 1 :]
    return describe((torch.cat([prompt, logits.argmax(dim=-1)], dim=1), logits))


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
    exception type it raised (None if it did not raise) and ``raised_as`` the built-in
    exceptions it is an instance of, so that a contract's "ValueError" is met by a subclass.
    """

    seed_torch(seed)
    v2 = lookup(ns, "SelfAttention_v2")(d_in, d_out, qkv_bias=qkv_bias)
    if v2_state:
        load_state(v2, v2_state)
    v1 = lookup(ns, "SelfAttention_v1")(d_in, d_out)
    copy = lookup(ns, name)
    if qkv_bias:
        try:
            copy(v2, v1)
        except Exception as exc:
            kinds = [c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"]
            return {"raised": type(exc).__name__, "raised_as": kinds}
        return {"raised": None, "raised_as": []}
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
    "cache_steps": cache_steps,
    "decode": decode,
    "generation": generation,
}


# -- what a reply from an untrusted implementation must look like -------------------------------


class MalformedResult(ValueError):
    """An adapter result that does not have the documented shape (a hostile or broken reply)."""


DESCRIPTION_KINDS = ("tensor", "ndarray", "number", "sequence", "none", "other")
MAX_SEQUENCE_DEPTH = 4


def _check_description(value: Any, depth: int = 0) -> None:
    kind = value.get("kind") if isinstance(value, dict) else None
    if not (isinstance(kind, str) and kind in DESCRIPTION_KINDS):
        raise MalformedResult("an output description has no known kind")
    if kind in ("tensor", "ndarray", "number"):
        if not isinstance(value.get("array"), np.ndarray) or not isinstance(
            value.get("dtype"), str
        ):
            raise MalformedResult(f"a {kind} output has no array or dtype")
        if not isinstance(value.get("attached", False), bool):
            raise MalformedResult(f"a {kind} output's 'attached' is not true or false")
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


def _validate_driven(adapter: str, result: dict[str, Any]) -> None:
    """The replies of lesson 6's adapters, which drive a cache, a layer or a model."""
    if adapter == "cache_steps":
        _check_steps(result.get("steps"), "steps")
        return
    lists = ("chunks", "positions") if adapter == "decode" else ("uncached",)
    for key in lists:
        items = result.get(key)
        if not isinstance(items, list):
            raise MalformedResult(f"{key} is not a list")
        for item in items:
            _check_description(item)
    _check_inputs_after(result.get("inputs_after"))
    if adapter == "generation":
        _check_steps(result.get("runs"), "runs")
        return
    _check_description(result.get("full"))
    stored = result.get("stored")
    if not isinstance(stored, list) or not all(
        s is None or isinstance(s, np.ndarray) for s in stored
    ):
        raise MalformedResult("stored is not a list of shapes")
    if not isinstance(result.get("cache_bytes"), np.ndarray):
        raise MalformedResult("cache_bytes is not a number")


def _check_steps(value: Any, what: str) -> None:
    """A list of step reports: descriptions under ``out`` and ``position``, the name of a
    refusal (or None) under ``raised``, arrays (or None) elsewhere."""
    if not isinstance(value, list):
        raise MalformedResult(f"{what} is not a list")
    for item in value:
        if not isinstance(item, dict) or not all(isinstance(k, str) for k in item):
            raise MalformedResult(f"{what} holds something that is not a report")
        for key, entry in item.items():
            if key in ("out", "position"):
                _check_description(entry)
            elif key == "raised":
                if not (entry is None or (isinstance(entry, str) and entry == REFUSAL)):
                    raise MalformedResult(f"{what}: raised is not the refusal")
            elif entry is not None and not isinstance(entry, np.ndarray):
                raise MalformedResult(f"{what}: {key} is not an array")


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
    check = REPLIES.get(adapter)
    if check is None:
        raise MalformedResult(f"unknown adapter {adapter!r}")
    try:
        check(result)
    except MalformedResult:
        raise
    except (TypeError, ValueError) as exc:  # a value of a type no check compares (an array)
        raise MalformedResult(f"the result is malformed ({type(exc).__name__})") from None
    return result


def _call_reply(result: dict[str, Any]) -> None:
    """call_function's and layer_property's: a description and the inputs after the call."""
    _check_description(result.get("out"))
    _check_inputs_after(result.get("inputs_after"))


def _module_reply(result: dict[str, Any]) -> None:
    _call_reply(result)
    _check_arrays(result.get("params"), "params")
    _check_arrays(result.get("buffers"), "buffers")
    _check_arrays(result.get("grads"), "grads", allow_none=True)
    kept = result.get("kept", {})
    if not isinstance(kept, dict) or not all(isinstance(k, str) for k in kept):
        raise MalformedResult("kept is not a mapping of names to outputs")
    for item in kept.values():
        _check_description(item)


def _step_reply(result: dict[str, Any]) -> None:
    _call_reply(result)
    _check_arrays(result.get("params"), "params")


def _transfer_reply(result: dict[str, Any]) -> None:
    if "raised" in result:
        if result["raised"] is not None and not isinstance(result["raised"], str):
            raise MalformedResult("raised is not an exception name")
        kinds = result.get("raised_as")
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise MalformedResult("raised_as is not a list of exception names")
    else:
        _check_arrays(result.get("v1"), "v1")
        _check_arrays(result.get("v2"), "v2")
        if not isinstance(result.get("returned_v1"), bool):
            raise MalformedResult("returned_v1 is not a boolean")


def _shapes_reply(result: dict[str, Any]) -> None:
    shapes = result.get("shapes")
    if not isinstance(shapes, dict) or not all(
        isinstance(s, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in s)
        for s in shapes.values()
    ):
        raise MalformedResult("shapes is not a mapping of names to integer lists")


def _bounded_reply(result: dict[str, Any]) -> None:
    """bounded_call's: call_function's, and what the memory watch saw."""
    _call_reply(result)
    _check_memory(result.get("memory"))


REPLIES: dict[str, Callable[[dict[str, Any]], None]] = {
    "call_function": _call_reply,
    "bounded_call": _bounded_reply,
    "layer_property": _call_reply,
    "run_module": _module_reply,
    "train_step": _step_reply,
    "transfer_weights": _transfer_reply,
    "parameter_shapes": _shapes_reply,
    **{
        driven: functools.partial(_validate_driven, driven)
        for driven in ("cache_steps", "decode", "generation")
    },
}
"""Each adapter's check of the rest of its reply (see :func:`validate_result`)."""
