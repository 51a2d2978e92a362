"""A probe runs one exercise of one implementation through the adapters.

It fills in what every call needs (the exercise's name, its framework, its forbidden
calls) and turns a forbidden call into a failed check, so tests read as plain intent:

    out = probe.call(x, axis=0)["out"]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .assignments import Exercise
from .compare import CheckFailed
from .implementation import Implementation
from .student_process.withheld import WITHHELD_TYPE


class Probe:
    def __init__(self, impl: Implementation, exercise: Exercise, framework: str) -> None:
        self.impl = impl
        self.exercise = exercise
        self.framework = framework

    def _run(self, adapter: str, **kwargs: Any) -> dict[str, Any]:
        try:
            result = self.impl.run(adapter, forbidden=self.exercise.forbidden, **kwargs)
        except Exception as exc:
            # The grader calls each exercise where the kernels it must not use are withheld
            # (attnkit.student_process.withheld): needing one is using one.
            if getattr(exc, "type_name", type(exc).__name__) != WITHHELD_TYPE:
                raise
            said = getattr(exc, "message", str(exc))
            raise CheckFailed(
                f"{self.exercise.name} calls {said}, which this exercise asks you to write "
                "yourself",
                "Build it from the basic operations the lesson shows.",
                stage="forbidden",
            ) from None
        used = result.get("forbidden_used") or []
        unverified = result.get("forbidden_unverified")
        if unverified:
            raise CheckFailed(
                f"{self.exercise.name} could not be checked: {unverified}",
                "Remove the code that changes how PyTorch runs (or the threads), then run "
                "the notebook again from the top.",
                stage="forbidden",
            )
        if used:
            raise CheckFailed(
                f"{self.exercise.name} calls {', '.join(used)}, which this exercise asks "
                "you to write yourself",
                "Build it from the basic operations the lesson shows.",
                stage="forbidden",
            )
        return result

    def call(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Call the exercise's function with arrays (converted for torch exercises)."""
        return self._run(
            "call_function",
            name=self.exercise.name,
            args=list(args),
            kwargs=kwargs,
            framework=self.framework,
        )

    def bounded(self, *args: Any, limit_bytes: int, **kwargs: Any) -> dict[str, Any]:
        """Call the exercise's function as :meth:`call` does, while no tensor it makes may
        exceed ``limit_bytes`` (see adapters.bounded_call)."""
        return self._run(
            "bounded_call",
            name=self.exercise.name,
            args=list(args),
            kwargs=kwargs,
            framework=self.framework,
            limit_bytes=limit_bytes,
        )

    def module(
        self,
        init_args: list[Any],
        inputs: list[np.ndarray],
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Build the exercise's module and run it (see adapters.run_module)."""
        return self._run(
            "run_module", name=self.exercise.name, init_args=init_args, inputs=inputs, **kwargs
        )

    def parameter_shapes(self, init_args: list[Any], **init_kwargs: Any) -> dict[str, list[int]]:
        return self._run(
            "parameter_shapes",
            name=self.exercise.name,
            init_args=init_args,
            init_kwargs=init_kwargs,
        )["shapes"]

    def train_step(
        self, vocab_size: int, width: int, inputs: Any, targets: Any, **kwargs: Any
    ) -> dict[str, Any]:
        """One call of the exercise's training step on a model the kit builds (see
        adapters.train_step)."""
        return self._run(
            "train_step",
            name=self.exercise.name,
            vocab_size=vocab_size,
            width=width,
            inputs=inputs,
            targets=targets,
            **kwargs,
        )

    def with_layer(self, layer: str, *args: Any, seed: int = 0) -> dict[str, Any]:
        """Call the exercise with a layer the kit builds, then ``args`` (see
        adapters.layer_property)."""
        return self._run(
            "layer_property", name=self.exercise.name, layer=layer, args=list(args), seed=seed
        )

    def cache_steps(
        self, init_args: list[Any], steps: list[dict[str, Any]], **kwargs: Any
    ) -> dict[str, Any]:
        """Build the exercise's cache and drive it through ``steps`` (see
        adapters.cache_steps)."""
        return self._run(
            "cache_steps", name=self.exercise.name, init_args=init_args, steps=steps, **kwargs
        )

    def decode(self, init_args: list[Any], chunks: list[Any], **kwargs: Any) -> dict[str, Any]:
        """Feed the exercise's layer or model ``chunks`` with a cache, then all of them at
        once without one (see adapters.decode)."""
        return self._run(
            "decode", name=self.exercise.name, init_args=init_args, chunks=chunks, **kwargs
        )

    def generation(
        self, init_args: list[Any], prompts: list[Any], max_new_tokens: int, **kwargs: Any
    ) -> dict[str, Any]:
        """Generate from each prompt with the exercise, on one model the kit builds from the
        notebook's ``TinyDecoder`` (see adapters.generation)."""
        return self._run(
            "generation",
            name=self.exercise.name,
            init_args=init_args,
            prompts=prompts,
            max_new_tokens=max_new_tokens,
            **kwargs,
        )

    def sibling(self, exercise: Exercise) -> Probe:
        """A probe for another exercise of the same implementation."""
        return Probe(self.impl, exercise, self.framework)

    def transfer(
        self,
        d_in: int,
        d_out: int,
        seed: int = 0,
        qkv_bias: bool = False,
        v2_state: dict[str, np.ndarray] | None = None,
    ) -> dict[str, Any]:
        """Copy a v2's weights into a v1; ``v2_state`` (the caller's) is loaded into v2 first."""
        return self._run(
            "transfer_weights",
            name=self.exercise.name,
            d_in=d_in,
            d_out=d_out,
            seed=seed,
            qkv_bias=qkv_bias,
            v2_state=v2_state,
        )
