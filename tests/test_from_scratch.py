"""Only runtime evidence costs points for a forbidden call; the verdict says where it was made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings, grade_submission
from attnkit_autograder.grading.submission import Submission
from attnkit_autograder.sandbox.zygote import discard_zygote

ROOT = Path(__file__).resolve().parents[1]
SLUG = "02_self_attention"
pytestmark = pytest.mark.slow

# Each evasion reaches PyTorch's softmax kernel under another name.
EVASIONS = {
    "alias": "f = torch.softmax\nreturn f(x, dim)",
    "log_softmax": "return torch.log_softmax(x, dim=dim).exp()",
    "private": "return torch._softmax(x, dim, False)",
    "aten": "return torch.ops.aten._softmax(x, dim, False)",
    "string": "return getattr(torch, 'soft' + 'max')(x, dim)",
    # One query over n keys with identity values: the fused attention kernel's weights
    # are softmax(x), whatever name the kernel has.
    "attention": (
        "n = x.shape[dim]\n"
        "flat = x.movedim(dim, -1).reshape(-1, n)\n"
        "rows = flat.shape[0]\n"
        "q = torch.zeros(rows, 1, 1, n, dtype=x.dtype)\n"
        "q[..., 0] = 1\n"
        "k = torch.zeros(rows, 1, n, n, dtype=x.dtype)\n"
        "k[:, 0, :, 0] = flat\n"
        "v = torch.eye(n, dtype=x.dtype).expand(rows, 1, n, n).contiguous()\n"
        "attend = getattr(torch.nn.functional, 'scaled_dot_' + 'product_attention')\n"
        "out = attend(q, k, v, scale=1.0).reshape(flat.shape)\n"
        "return out.reshape(x.movedim(dim, -1).shape).movedim(-1, dim)"
    ),
}
OWN_SDPA = '''\
def scaled_dot_product_attention(q, k, v):
    """A student's own helper that happens to share the library's name."""
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    return softmax(scores, dim=-1) @ v

# Exploration outside the exercises: compare with the library's version.
import torch.nn.functional as F

q = torch.randn(1, 3, 4)
gap = (scaled_dot_product_attention(q, q, q) - F.scaled_dot_product_attention(q, q, q)).abs().max()
'''


def grade(tmp_path: Path, name: str, overrides: dict, extra: str | None = None) -> dict:
    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG, overrides)
    if extra is not None:
        notebook["cells"].insert(
            2, {"cell_type": "code", "metadata": {}, "outputs": [], "source": extra}
        )
    path = write_notebook(notebook, tmp_path / f"{name}_{SLUG}.ipynb")
    try:
        return grade_submission(
            Submission(name, SLUG, path), GradeSettings(GradeOptions(timeout=20))
        )
    finally:
        discard_zygote()


def cell(record: dict, grade_id: str) -> dict:
    return next(t for t in record["tests"] if t["grade_id"] == grade_id)


@pytest.mark.parametrize("evasion", sorted(EVASIONS))
def test_every_way_to_reach_the_softmax_kernel_is_forbidden(tmp_path, evasion) -> None:
    record = grade(tmp_path, evasion, {"softmax": EVASIONS[evasion]})
    values = cell(record, "test_softmax_values")
    assert values["status"] == "forbidden", values
    assert values["points"] == 0
    assert "softmax" in values["message"] and "code cell" in values["message"]
    # The other exercises call the student's softmax, which is theirs to call (unless it
    # runs an attention kernel, which they may not run either).
    expected = "forbidden" if evasion == "attention" else "passed"
    assert cell(record, "test_v1_forward")["status"] == expected


def test_a_name_in_the_source_alone_costs_nothing_but_is_noted(tmp_path) -> None:
    record = grade(tmp_path, "own_helper", {}, extra=OWN_SDPA)
    assert record["score"] == record["max_score"], record["tests"]
    assert any("scaled_dot_product_attention" in n for n in record["notes"])


PRIVATE_REACHES = {
    "import torch\nstack = torch.overrides._get_current_function_mode_stack()\n": (
        "torch.overrides._get_current_function_mode_stack"
    ),
    "import torch as t\ny = t.ops.aten._softmax(x, -1, False)\n": "t.ops.aten._softmax",
    "from torch.overrides import _get_current_function_mode_stack\n": (
        "torch.overrides._get_current_function_mode_stack"
    ),
}
OWN_PRIVATES = (
    "from torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self._proj = nn.Linear(2, 2)\n"
    "    def forward(self, x):\n        return self._proj(x)\n"
)


def test_a_librarys_private_api_is_noted_and_a_classs_own_privates_are_not() -> None:
    """Reaching a library's private names (how the recorder's report is forged) is noted,
    whatever the module is bound to; a class's own ``self._x`` is honest code."""
    from attnkit_autograder.grading.scan import tampering

    for source, path in PRIVATE_REACHES.items():
        found = [f.what for f in tampering([(1, source)])]
        assert found == [f"a library's private API ({path})"], (source, found)
    closure = "import inspect\nr = inspect.getclosurevars(f).nonlocals['recorder']\n"
    assert [f.what for f in tampering([(1, closure)])] == [
        "inspect.getclosurevars (another function's variables)"
    ]
    assert tampering([(1, OWN_PRIVATES)]) == []


def test_a_recorder_that_cannot_start_leaves_no_hook_behind(monkeypatch) -> None:
    """If PyTorch refuses the recorder's second hook (the dispatch level), the first (the
    function level) is taken off again: no hook outlives a recorder, in a worker or in the
    zygote's warm-up, from which every worker is forked."""
    import pytest
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from attnkit.student_process.recorder import Recorder

    def refuse(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("refused")

    monkeypatch.setattr(TorchDispatchMode, "__enter__", refuse)
    with pytest.raises(RuntimeError, match="refused"), Recorder(["torch.softmax"]):
        pass
    assert torch._C._len_torch_function_stack() == 0
    assert torch._C._len_torch_dispatch_stack() == 0


def test_a_forbidden_function_whose_library_loads_later_is_watched_from_then_on() -> None:
    """The recorder resolves each forbidden function once its library is loaded: a
    recorder made before the notebook imports the library watches nothing of it, every
    recorder after does (the zygote makes the first recorders, before any notebook)."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, sys, torch\n"
        "from attnkit.student_process.recorder import Recorder\n"
        "assert 'fractions' not in sys.modules\n"
        "before = list(Recorder(['fractions.Fraction']).functions.values())\n"
        "import fractions\n"
        "after = list(Recorder(['fractions.Fraction']).functions.values())\n"
        "print(json.dumps([before, after]))\n"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert json.loads(shown.stdout.strip().splitlines()[-1]) == [[], ["fractions.Fraction"]]


HONEST_GENERATOR = """
import json, warnings
warnings.simplefilter("ignore")
import numpy as np, torch
from attnkit.implementation import recorded_caller

call = recorded_caller()

def rows(x):
    with torch.inference_mode():
        for r in x:
            yield r.exp() / r.exp().sum()

def softmax(x):
    out = []
    gen = rows(x)
    for r in gen:
        if r.shape[0] > 3:
            raise ValueError("rows longer than 3 are not supported yet")  # an honest bug
        out.append(r)
    return torch.stack(out)

seen = []
for shape in [(2, 3), (2, 5), (2, 3)]:
    x = np.ones(shape, dtype=np.float32)
    try:
        kwargs = {"name": "softmax", "args": [x], "framework": "torch"}
        out = call({"softmax": softmax}, "call_function", ("torch.softmax",), kwargs)
        seen.append(["ok", out.get("forbidden_unverified")])
    except BaseException as exc:
        seen.append([type(exc).__name__, None])
print(json.dumps(seen))
"""


def test_one_honest_failure_leaves_the_next_calls_unharmed() -> None:
    """An exercise that raises while a generator of its holds ``torch.inference_mode``
    open: the guard ends after the recorder, restoring PyTorch's dispatch keys. The next
    recorder must start without making a tensor first, or every later call fails inside
    PyTorch, for the student's one honest bug."""
    import json
    import subprocess
    import sys

    shown = subprocess.run([sys.executable, "-c", HONEST_GENERATOR], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr[-2000:]
    seen = json.loads(shown.stdout.strip().splitlines()[-1])
    assert seen == [["ok", None], ["ValueError", None], ["ok", None]]


def test_hook_classes_changed_between_calls_are_made_again() -> None:
    """The recorder keeps its two hook classes across calls; code that finds them
    (``__subclasses__``) and changes them between calls, by attribute or by code, gets
    fresh ones at the next call: the forbidden call is still seen."""
    import numpy as np
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from attnkit.implementation import recorded_caller

    call = recorded_caller()
    namespace = {"f": lambda x: torch.softmax(torch.as_tensor(x), -1).numpy()}
    request = {"name": "f", "args": [np.ones((2, 3), dtype=np.float32)]}

    def seen() -> list[str]:
        result = call(namespace, "call_function", ("torch.softmax",), request)
        assert "forbidden_unverified" not in result
        return result["forbidden_used"]

    def silent(self, func, types, args=(), kwargs=None):  # counts canaries, hides the rest
        recorder = self.recorder
        if recorder._in_canary:
            recorder.canaries["function"] += func is recorder._in_canary
            recorder.canaries["kernel"] += 1
        return func(*args, **(kwargs or {}))

    expected = ["torch.softmax", "aten._softmax, PyTorch's kernel"]
    assert seen() == expected
    hooks = [*TorchFunctionMode.__subclasses__(), *TorchDispatchMode.__subclasses__()]
    for hook in hooks:
        if hook.__name__ in ("Functions", "Kernels"):
            hook.__torch_function__ = hook.__torch_dispatch__ = silent
    assert seen() == expected
    swapped = 0
    for hook in TorchFunctionMode.__subclasses__():
        if hook.__name__ == "Functions" and "__torch_function__" in vars(hook):
            vars(hook)["__torch_function__"].__code__ = silent.__code__
            swapped += 1
    assert swapped and seen() == expected

    class LookAlike:  # has the original's parts, passes any comparison by value, runs silent
        def __init__(self, original: Any) -> None:
            self.__code__, self.__closure__ = original.__code__, original.__closure__
            self.__defaults__, self.__kwdefaults__ = original.__defaults__, original.__kwdefaults__

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return silent(*args, **kwargs)

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

        def __get__(self, instance: Any, owner: Any = None) -> Any:
            return silent.__get__(instance, owner)

    for hook in [*TorchFunctionMode.__subclasses__(), *TorchDispatchMode.__subclasses__()]:
        for name in ("__torch_function__", "__torch_dispatch__"):
            if hook.__name__ in ("Functions", "Kernels") and name in vars(hook):
                setattr(hook, name, LookAlike(vars(hook)[name]))
    assert seen() == expected
