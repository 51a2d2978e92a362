"""An *implementation* is anything that can answer adapter calls.

The self-check and the hidden suites talk to implementations only through
``impl.run(adapter, **kwargs)``, so a test does not care whether the code runs in this
process (a notebook's definitions, the references, a catalogued mistake) or in an
isolated worker (a submission being graded).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .adapters import ADAPTERS
from .forbidden import Recorder


class Implementation(Protocol):
    label: str

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any
    ) -> dict[str, Any]: ...


class LocalImplementation:
    """Definitions living in this process, e.g. a notebook's namespace or a reference module.

    Exceptions raised by the implementation propagate unchanged; ``forbidden_used`` in
    the result lists the forbidden calls made during the call.
    """

    def __init__(self, namespace: Mapping[str, Any], label: str = "implementation") -> None:
        self.namespace = namespace
        self.label = label

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any
    ) -> dict[str, Any]:
        with Recorder(forbidden) as recorder:
            result = ADAPTERS[adapter](self.namespace, **kwargs)
        result["forbidden_used"] = list(recorder.used)
        return result
