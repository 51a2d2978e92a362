"""Per-student feedback: a self-contained HTML report and a plain-text summary.

``attnkit grade ... --feedback`` writes, for every graded submission,
``OUT/feedback/<student>/<assignment>.html`` and ``.txt``. The HTML has the score per
exercise, each graded cell's status, message and hint (naming the classic mistake when
one matches), and, for the lessons whose exercises return attention weights, a heatmap
of the student's weights beside the reference's on the opening words of The Verdict.

The report loads nothing: styles are inline and the heatmaps are inline SVG, so it opens
offline and in a sandboxed LMS viewer. Every piece of text that can come from a student
(exception messages, notes) is escaped. Messages are the grader's own (built from what
failed, with a few numbers at most), so no hidden test's source can appear.
"""

from __future__ import annotations

import functools
import html
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.assignments import ASSIGNMENTS

HEATMAP_TOKENS = 10
HEATMAP_WIDTH = 8
CAUSAL_HEATMAPS = {"01_numpy_attention", "03_causal_attention"}


# -- the heatmap's inputs and calls ------------------------------------------------------------


@functools.cache
def sentence() -> tuple[list[int], list[str]]:
    """The first tokens of the-verdict.txt, and how each one reads."""
    from attnkit_data import gpt2_tokenizer, read_verdict

    tokenizer = gpt2_tokenizer()
    ids = tokenizer.encode(read_verdict())[:HEATMAP_TOKENS]
    return ids, [tokenizer.decode([i]) for i in ids]


def embeddings(ids: list[int], dtype: Any) -> np.ndarray:
    """A fixed vector per token id (seeded by the id), so every run draws the same map."""
    rows = [np.random.default_rng(i).normal(size=HEATMAP_WIDTH) for i in ids]
    return np.stack(rows).astype(dtype)


def projections(dtype: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(2024)
    return [rng.normal(size=(HEATMAP_WIDTH, HEATMAP_WIDTH)).astype(dtype) / 2 for _ in range(3)]


def heatmap_call(slug: str) -> tuple[str, str, dict[str, Any], Any] | None:
    """(exercise, adapter, kwargs, pick-the-weights) for the assignment, or None."""
    ids, _ = sentence()
    if slug == "01_numpy_attention":
        x = embeddings(ids, np.float64)
        kwargs = {
            "name": "self_attention",
            "args": [x, *projections(np.float64)],
            "kwargs": {"causal": True},
            "framework": "numpy",
        }
        return "self_attention", "call_function", kwargs, lambda a: a
    if slug == "02_self_attention":
        kwargs = {
            "name": "simple_attention_matrix",
            "args": [embeddings(ids, np.float32)],
            "kwargs": {},
            "framework": "torch",
        }
        return "simple_attention_matrix", "call_function", kwargs, lambda a: a
    if slug == "03_causal_attention":
        x = embeddings(ids, np.float32)
        q, k, v = (x @ w for w in projections(np.float32))
        mask = np.triu(np.ones((len(ids), len(ids)), dtype=bool), k=1)
        kwargs = {
            "name": "ScaledDotProductAttention",
            "init_args": [],
            "inputs": [q[None, None], k[None, None], v[None, None], mask],
        }
        return "ScaledDotProductAttention", "run_module", kwargs, lambda a: a[0, 0]
    return None  # lesson 4: no exercise returns its weights


def collect_heatmap(slug: str, submission: Any, reference: Any) -> dict[str, Any] | None:
    """The student's and the reference's weights on the sentence (or why there are none)."""
    spec = heatmap_call(slug)
    if spec is None:
        return None
    exercise, adapter, kwargs, pick = spec
    _, labels = sentence()
    heatmap: dict[str, Any] = {
        "exercise": exercise,
        "tokens": labels,
        "causal": slug in CAUSAL_HEATMAPS,
    }
    for who, impl in (("reference", reference), ("student", submission)):
        try:
            out = impl.run(adapter, **kwargs)["out"]
            weights = pick(np.asarray(out["items"][1]["array"], dtype=np.float64))
            if weights.shape != (len(labels), len(labels)):
                raise ValueError(f"weights of shape {list(weights.shape)}")
            heatmap[who] = weights.tolist()
        except Exception as exc:  # the student's code may fail in any way: say so instead
            heatmap[who] = None
            heatmap[f"{who}_error"] = f"{type(exc).__name__}: {exc}"[:200]
    return heatmap


# -- rendering --------------------------------------------------------------------------------


def colour(value: float) -> str:
    """A dark-blue to yellow ramp for weights in [0, 1]; grey for anything not finite."""
    if not np.isfinite(value):
        return "#999999"
    t = float(min(max(value, 0.0), 1.0)) ** 0.5  # sqrt: small weights stay visible
    low, high = np.array([38, 16, 92]), np.array([253, 231, 37])
    r, g, b = (low + (high - low) * t).astype(int)
    return f"#{r:02x}{g:02x}{b:02x}"


def svg_heatmap(weights: list[list[float]], tokens: list[str], title: str, causal: bool) -> str:
    """An inline SVG grid: row i is query i, column j key j, colour the weight."""
    cell, left, top = 26, 92, 84  # room for the row labels and the slanted column labels
    n = len(tokens)
    width, height = left + n * cell + 10, top + n * cell + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)}">',
        f'<text x="{left}" y="16" class="t">{html.escape(title)}</text>',
    ]
    for i, row in enumerate(weights):
        for j, value in enumerate(row):
            parts.append(
                f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell - 1}" '
                f'height="{cell - 1}" fill="{colour(value)}"><title>'
                f"{html.escape(tokens[i])} → {html.escape(tokens[j])}: {value:.3f}"
                "</title></rect>"
            )
    for k, token in enumerate(tokens):
        label = html.escape(token.strip() or "␣")
        middle = k * cell + cell / 2
        parts.append(
            f'<text x="{left - 6}" y="{top + middle + 4}" text-anchor="end" '
            f'class="l">{label}</text>'
        )
        parts.append(
            f'<text x="{left + middle}" y="{top - 4}" class="l" '
            f'transform="rotate(-60 {left + middle} {top - 4})">{label}</text>'
        )
    if causal:
        end = n * cell
        parts.append(
            f'<line x1="{left}" y1="{top}" x2="{left + end}" y2="{top + end}" '
            'stroke="#ffffff" stroke-dasharray="4 3" stroke-width="1"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


STATUS_LABELS = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "timeout": "timeout",
    "forbidden": "forbidden call",
}
STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1c1c1c;
max-width:1100px}h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.45rem;
text-align:left;vertical-align:top}th{background:#f4f4f4}.score{font-size:1.2rem}
.passed{color:#176c2f;font-weight:600}.failed,.error,.timeout,.forbidden{color:#a4161a;
font-weight:600}.hint{color:#4a4a4a;font-style:italic}.mistake{color:#7a4a00}
.maps{display:flex;gap:2rem;flex-wrap:wrap}.t{font:600 13px system-ui,sans-serif}
.l{font:11px system-ui,sans-serif}.note{color:#555;font-size:.9rem}
"""


def render_html(record: dict[str, Any]) -> str:
    slug = record.get("assignment")
    title = ASSIGNMENTS[slug].title if slug in ASSIGNMENTS else str(slug)
    e = html.escape
    rows = []
    for test in record["tests"]:
        status = test["status"]
        detail = e(test["message"]) if test["message"] else ""
        if test.get("diagnosis"):
            detail += (
                f'<div class="mistake">Looks like a classic mistake: '
                f"<b>{e(test['diagnosis']['title'])}</b> "
                f"({e(test['diagnosis']['symptom'])}).</div>"
            )
        if test.get("hint"):
            detail += f'<div class="hint">Hint: {e(test["hint"])}</div>'
        rows.append(
            f"<tr><td>{e(test['exercise'])}</td><td>{e(test['grade_id'])}</td>"
            f"<td>{test['points']:g} / {test['max_points']:g}</td>"
            f'<td class="{e(status)}">{e(STATUS_LABELS.get(status, status))}</td>'
            f"<td>{detail}</td></tr>"
        )
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>Feedback: {e(record['student'])}, {e(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{e(title)}: feedback for {e(record['student'])}</h1>",
        f'<p class="score">Score: <b>{record["score"]:g}</b> of {record["max_score"]:g}</p>',
    ]
    if record["status"] == "error":
        parts.append(
            f'<p class="error">This submission could not be graded: {e(record["error"] or "")}</p>'
        )
    parts += [
        "<table><tr><th>exercise</th><th>graded cell</th><th>points</th><th>result</th>"
        "<th>what the hidden tests found</th></tr>",
        *rows,
        "</table>",
    ]
    heatmap = record.get("heatmap")
    if heatmap:
        parts.append(
            f"<h2>Attention weights of {e(heatmap['exercise'])} on the opening of "
            "<i>The Verdict</i></h2>"
        )
        if heatmap.get("causal"):
            parts.append(
                '<p class="note">Rows are queries, columns keys. In causal attention '
                "everything above the dashed diagonal must be dark: colour there is a "
                "token looking at its future.</p>"
            )
        maps = []
        for who, label in (("student", "Your weights"), ("reference", "Reference weights")):
            if heatmap.get(who) is not None:
                maps.append(
                    svg_heatmap(
                        heatmap[who], heatmap["tokens"], label, heatmap.get("causal", False)
                    )
                )
            else:
                maps.append(
                    f'<p class="note">{label}: not available '
                    f"({e(heatmap.get(f'{who}_error', ''))})</p>"
                )
        parts.append(f'<div class="maps">{"".join(maps)}</div>')
    if record.get("notes"):
        parts.append("<h2>Notes on your notebook</h2><ul>")
        parts += [f'<li class="note">{e(n)}</li>' for n in record["notes"][:20]]
        parts.append("</ul>")
    parts.append('<p class="note">Generated by attention-kit.</p></body></html>')
    return "\n".join(parts)


def render_text(record: dict[str, Any]) -> str:
    """A plain-text summary for an LMS comment box."""
    slug = record.get("assignment")
    title = ASSIGNMENTS[slug].title if slug in ASSIGNMENTS else str(slug)
    lines = [f"{title}: {record['score']:g} / {record['max_score']:g}"]
    if record["status"] == "error":
        lines.append(f"Could not be graded: {record['error']}")
    for test in record["tests"]:
        lines.append(
            f"- {test['exercise']} ({test['grade_id']}): {test['status']}, "
            f"{test['points']:g}/{test['max_points']:g}"
        )
        if test["status"] != "passed" and test["message"]:
            lines.append(f"    {test['message']}")
        if test.get("diagnosis"):
            lines.append(f"    Looks like a classic mistake: {test['diagnosis']['title']}.")
        if test.get("hint"):
            lines.append(f"    Hint: {test['hint']}")
    return "\n".join(lines) + "\n"


def write_feedback(out: Path) -> list[Path]:
    """Render feedback for every result under OUT/results (atomically, like everything)."""
    import json

    from .engine import write_atomic

    written = []
    for path in sorted((out / "results").glob("*/*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        target = out / "feedback" / path.parent.name / path.stem
        write_atomic(target.with_suffix(".html"), render_html(record))
        write_atomic(target.with_suffix(".txt"), render_text(record))
        written.append(target.with_suffix(".html"))
    return written
