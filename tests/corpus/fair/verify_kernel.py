# ruff: noqa: E501 (the in-kernel verification code is kept compact)
"""Verify fairness-corpus cases in a real Jupyter kernel (nbclient), independently of the grader.

For each case file given, the built notebook (``builder.build``) runs top to bottom in a fresh
``python3`` kernel, its working folder a scratch folder, with every error allowed (as "Run
All" goes on in Jupyter only when asked; here every cell's error is recorded). Right after
each ``lesson.check(NAME)`` cell, and once at the very end, a verification cell is run in
the same kernel. It judges the exercise *as it is live at that moment* (the state the
student saw when the check passed):

* the kit's hidden suite for that exercise's graded cells, against the references
  (``attnkit_solutions``), on the kernel's own namespace;
* spot checks of this file's own: the exercise's values against the reference's on random
  inputs (modules built from the same seed, in eval mode; ``train_step`` on twin models).

Random states (torch, numpy, random) are saved and restored around each verification, so
the cells that follow see the state they would have seen. Reports, per case: cells that
raised, each check cell's printed verdict, the verdicts at each check and at the end.

Usage: python tests/corpus/fair/verify_kernel.py OUT_DIR CASE.py [CASE.py ...]
(writes OUT_DIR/<lesson>__<student>.json and the executed notebook beside it).

This is a tester's tool, not part of the kit's test suite.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import builder  # noqa: E402

VERIFY_MODULE = r'''
import json, random, contextlib, io, warnings
import numpy as _np
import torch as _torch


def _state():
    return random.getstate(), _np.random.get_state(), _torch.get_rng_state()


def _restore(s):
    random.setstate(s[0]); _np.random.set_state(s[1]); _torch.set_rng_state(s[2])


def _close(a, b, tol=1e-5):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, _torch.Tensor):
        a = a.detach().numpy()
    if isinstance(b, _torch.Tensor):
        b = b.detach().numpy()
    a, b = _np.asarray(a), _np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(_np.allclose(a, b, atol=tol, rtol=tol, equal_nan=True))


def _twins(cls_s, cls_r, *args, **kw):
    _torch.manual_seed(11); s = cls_s(*args, **kw)
    _torch.manual_seed(11); r = cls_r(*args, **kw)
    r.load_state_dict(s.state_dict())
    return s.eval(), r.eval()


def spot(slug, name, S, R):
    """Own spot checks: True/False, or None where this file has none for the exercise."""
    g = _np.random.default_rng(7)
    if slug == "01_numpy_attention":
        x = g.normal(size=(3, 4, 5)).astype(_np.float32)
        if name == "softmax":
            y = x.copy(); y[0, 1] = -_np.inf
            return all(_close(S(v, axis=a), R(v, axis=a)) for v in (x, y * 1, x * 400) for a in (-1, 0, 1))
        if name == "scale_scores":
            return _close(S(x, 7), R(x, 7))
        if name == "attention_scores":
            k = g.normal(size=(3, 6, 5)).astype(_np.float32)
            return _close(S(x, k), R(x, k))
        if name == "causal_mask":
            return all(_close(S(n), R(n)) for n in (1, 2, 5))
        if name == "self_attention":
            W = [g.normal(size=(5, d)).astype(_np.float32) for d in (3, 3, 6)]
            return all(_close(S(x, *W, causal=c), R(x, *W, causal=c)) for c in (False, True))
        if name == "embed_one_hot":
            E = g.normal(size=(9, 4)).astype(_np.float32); ids = g.integers(0, 9, size=(2, 3))
            return _close(S(ids, E), R(ids, E))
        return None
    t = _torch.from_numpy(g.normal(size=(2, 5, 6)).astype(_np.float32))
    if slug == "02_self_attention":
        if name == "softmax":
            y = t.clone(); y[0, 1] = -_np.inf
            return all(_close(S(v, dim=d), R(v, dim=d)) for v in (t, y, t * 500) for d in (-1, 0, 1))
        if name in ("simple_attention_loop",):
            return _close(S(t[0]), R(t[0]))
        if name == "simple_attention_matrix":
            return _close(S(t), R(t))
        if name in ("SelfAttention_v1", "SelfAttention_v2"):
            s, r = _twins(S, R, 6, 4)
            return _close(s(t), r(t)) and _close(s(t[0]), r(t[0]))
        if name == "copy_v2_weights_into_v1":
            _torch.manual_seed(3); v2 = NS["SelfAttention_v2"](6, 4)
            v1 = S(v2, NS["SelfAttention_v1"](6, 4))
            ok = _close(v1(t), v2(t))
            try:
                S(NS["SelfAttention_v2"](6, 4, qkv_bias=True), NS["SelfAttention_v1"](6, 4))
                return False
            except ValueError:
                return ok
        return None
    if slug == "03_causal_attention":
        if name == "causal_mask":
            return all(_close(S(n), R(n)) for n in (1, 3, 6))
        if name == "apply_causal_mask":
            sc = t[:, :5, :5]
            return _close(S(sc), R(sc))
        if name == "ScaledDotProductAttention":
            s, r = _twins(S, R, 0.0)
            m = _torch.rand(2, 5, 5) > 0.6; m[0, 2] = True
            return _close(s(t, t, t, m), r(t, t, t, m)) and _close(s(t, t, t), r(t, t, t))
        if name == "CausalAttention":
            s, r = _twins(S, R, 6, 4, 8, 0.0)
            return _close(s(t), r(t))
        return None
    if slug == "04_multihead_attention":
        if name == "MultiHeadAttentionWrapper":
            s, r = _twins(S, R, 6, 3, 8, 0.0, 2)
            return _close(s(t), r(t))
        if name == "MultiHeadAttention":
            s, r = _twins(S, R, 6, 4, 8, 0.0, 2)
            return _close(s(t), r(t))
        if name in ("wrapper_d_out", "gpt2_attention_parameters"):
            return S() == R() and type(S()) is int
        return None
    if slug == "05_watch_attention_learn":
        w = _torch.softmax(_torch.from_numpy(g.normal(size=(2, 3, 7, 7)).astype(_np.float32)), -1)
        if name == "MultiHeadAttention":
            s, r = _twins(S, R, 6, 4, 8, 0.0, 2)
            pad = _torch.zeros(2, 1, 5, 5, dtype=_torch.bool); pad[1, ..., :2] = True
            return _close(s(t, pad), r(t, pad)) and _close(s.last_weights, r.last_weights) and _close(s(t), r(t))
        if name == "TinyTransformer":
            s, r = _twins(S, R, 11, 8, 9, 2, 2)
            ids = _torch.from_numpy(g.integers(0, 11, size=(3, 6)))
            return _close(s(ids), r(ids))
        if name == "train_step":
            _torch.manual_seed(5); m1 = NS["TinyTransformer"](11, 8, 9, 2, 2)
            _torch.manual_seed(5); m2 = NS["TinyTransformer"](11, 8, 9, 2, 2)
            o1 = _torch.optim.SGD(m1.parameters(), lr=0.1); o2 = _torch.optim.SGD(m2.parameters(), lr=0.1)
            ids = _torch.from_numpy(g.integers(0, 11, size=(3, 7)))
            l1 = S(m1, o1, ids[:, :-1], ids[:, 1:]); l2 = R(m2, o2, ids[:, :-1], ids[:, 1:])
            l1b = S(m1, o1, ids[:, :-1], ids[:, 1:]); l2b = R(m2, o2, ids[:, :-1], ids[:, 1:])
            same = all(_close(a, b) for a, b in zip(m1.parameters(), m2.parameters()))
            return type(l1) is float and abs(l1 - l2) < 1e-5 and abs(l1b - l2b) < 1e-5 and same
        if name in ("diagonal_score",):
            return all(_close(S(w, o), R(w, o)) for o in (0, 1, 3))
        if name == "first_token_score":
            return _close(S(w), R(w))
        if name == "induction_score":
            return all(_close(S(w, p), R(w, p)) for p in (1, 3, 6))
        if name == "padding_causal_mask":
            L = _torch.tensor([6, 2, 4])
            return _close(S(L, 6), R(L, 6))
        if name == "softmax_jacobian_norm":
            return _close(S(t), R(t))
        if name == "permutation_gap":
            lay = _torch.nn.Linear(6, 6); perm = _torch.tensor([2, 0, 1, 4, 3])
            a, b = S(lay, t, perm), R(lay, t, perm)
            return type(a) is float and abs(a - b) < 1e-6
    return None


NS = None


def report(namespace, slug, exercises, tag):
    """Verdicts for ``exercises`` as they are bound in ``namespace`` now."""
    global NS
    from attnkit.implementation import LocalImplementation
    from attnkit_autograder.grading.harness import reference_implementation, run_suite
    from attnkit_autograder.lessons.rubric import graded_cells
    from attnkit_solutions.exercises import reference_namespace

    saved = _state()
    default_dtype = _torch.get_default_dtype()
    NS = namespace
    ref = reference_namespace(slug)
    out = {"tag": tag, "exercises": {}}
    try:
        for name in exercises:
            ids = {c.grade_id for c in graded_cells(slug) if c.exercise == name}
            entry = {}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    verdicts = run_suite(LocalImplementation(dict(namespace)), slug, reference_implementation(slug), ids)
                    entry["hidden"] = [[v.grade_id, v.check, v.status, (v.message or "")[:300]] for v in verdicts]
                except BaseException as exc:
                    entry["hidden"] = [["-", "-", "crashed", repr(exc)[:300]]]
                S = namespace.get(name)
                R = ref.get(name)
                if S is not None and hasattr(S, "forward") is False and name[0].isupper():
                    pass
                try:
                    entry["spot"] = spot(slug, name, S, R) if S is not None else "missing"
                except BaseException as exc:
                    entry["spot"] = f"raised {type(exc).__name__}: {exc}"[:300]
            out["exercises"][name] = entry
    finally:
        _restore(saved)
        _torch.set_default_dtype(default_dtype)
    print("@@VERIFY@@" + json.dumps(out))
'''


def check_name(source: str) -> str | None:
    found = re.search(r"^lesson\.check\((\w+)\)\s*$", source.replace("\r\n", "\n"), re.M)
    return found.group(1) if found else None


def instrument(built: builder.Built) -> nbformat.NotebookNode:
    notebook = copy.deepcopy(built.notebook)
    cells = []
    exercises = []
    for cell in notebook["cells"]:
        cells.append(cell)
        if cell["cell_type"] != "code":
            continue
        name = check_name("".join(cell["source"]))
        if name:
            exercises.append(name)
            cells.append(
                builder.code_cell(
                    "import _fc_verify\n"
                    f"_fc_verify.report(globals(), {built.lesson!r}, [{name!r}], 'at check')"
                )
            )
    cells.append(
        builder.code_cell(
            "import _fc_verify\n"
            f"_fc_verify.report(globals(), {built.lesson!r}, {exercises!r}, 'at end')"
        )
    )
    notebook["cells"] = cells
    node = nbformat.reads(json.dumps(notebook), as_version=4)
    for cell in node.cells:  # nbclient wants ids; colab saves have none
        cell.setdefault("id", f"c{id(cell) % 10**8}")
    return node


def outputs_text(cell: nbformat.NotebookNode) -> tuple[str, list[str]]:
    text, errors = [], []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            text.append(output.text)
        elif output.output_type == "error":
            errors.append(f"{output.ename}: {output.evalue}"[:300])
        elif output.output_type in ("execute_result", "display_data"):
            text.append(output.get("data", {}).get("text/plain", ""))
    return "".join(text), errors


def verify(path: Path, out: Path) -> dict:
    built = builder.build(path)
    work = out / f"work-{built.lesson}-{built.name}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "_fc_verify.py").write_text(VERIFY_MODULE)
    notebook = instrument(built)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(work)}},
    )
    began = time.monotonic()
    client.execute()
    seconds = time.monotonic() - began
    record: dict = {
        "case": f"{built.lesson}/{built.name}",
        "seconds": round(seconds, 1),
        "cell_errors": [],
        "checks": {},
        "verify": [],
    }
    code_index = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        source = "".join(cell.source)
        text, errors = outputs_text(cell)
        if "_fc_verify.report" in source:
            for line in text.splitlines():
                if line.startswith("@@VERIFY@@"):
                    record["verify"].append(json.loads(line[len("@@VERIFY@@") :]))
            if errors:
                record["verify"].append({"tag": "verify cell raised", "errors": errors})
            continue
        code_index += 1
        if errors:
            record["cell_errors"].append(
                {
                    "cell": code_index,
                    "first_line": source.splitlines()[0] if source else "",
                    "errors": errors,
                }
            )
        name = check_name(source)
        if name:
            verdict = re.search(rf"{name}: (\d+) of (\d+) visible checks pass", text)
            record["checks"][name] = (
                "all pass"
                if verdict and verdict.group(1) == verdict.group(2)
                else text.strip()[:400]
            )
    record["ok_at_checks"] = (
        all(
            e.get("spot") in (True, None) and all(v[2] == "passed" for v in e.get("hidden", []))
            for r in record["verify"]
            if r.get("tag") == "at check"
            for e in r["exercises"].values()
        )
        and all(v == "all pass" for v in record["checks"].values())
        and not any(r.get("tag") == "verify cell raised" for r in record["verify"])
    )
    record["ok_at_end"] = all(
        e.get("spot") in (True, None) and all(v[2] == "passed" for v in e.get("hidden", []))
        for r in record["verify"]
        if r.get("tag") == "at end"
        for e in r["exercises"].values()
    )
    nbformat.write(notebook, out / f"{built.lesson}__{built.name}.executed.ipynb")
    (out / f"{built.lesson}__{built.name}.json").write_text(json.dumps(record, indent=1))
    return record


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[2:]:
        record = verify(Path(name).resolve(), out)
        print(
            f"{record['case']}: {record['seconds']} s, checks "
            f"{sum(v == 'all pass' for v in record['checks'].values())}/{len(record['checks'])} pass, "
            f"cell errors {len(record['cell_errors'])}, ok at checks {record['ok_at_checks']}, "
            f"ok at end {record['ok_at_end']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
