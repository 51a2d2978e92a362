"""Per-student feedback: a self-contained HTML report and a plain-text summary.

``attnkit grade ... --feedback`` writes, for every graded submission,
``OUT/feedback/<student>/<assignment>.html`` and ``.txt``. The HTML has the score per
exercise, each graded cell's status, message and hint (naming the classic mistake when
one matches), and heatmaps of the attention weights that the student's own pipeline
produces on the opening words of The Verdict, beside the reference's on the same inputs:
lesson 3 runs the student's mask through the student's attention, lesson 4 draws one map
per head for the wrapper and for the fused layer.

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
D_K, D_V = 4, 6  # different on purpose: scaling by the wrong width must show
HEADS = 2
LEAK = 1e-6
"""A weight above this on a later token is a causal leak."""


# -- the heatmaps' inputs and pipelines ---------------------------------------------------------
#
# Every map is computed from what the student's code returned for inputs chosen here,
# through the adapters (``impl.run``), never from anything else the sandbox reports. The
# reference runs the very same calls, so the two maps differ exactly where the student's
# pipeline does.


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


def projection(seed: int, width: int, dtype: Any, rows: int = HEATMAP_WIDTH) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=(rows, width)) / 2).astype(dtype)


def pair_weights(result: dict[str, Any]) -> np.ndarray:
    """The weights of an (output, weights) pair an exercise returned."""
    out = result["out"]
    if out.get("kind") != "sequence" or len(out["items"]) != 2 or "array" not in out["items"][1]:
        raise ValueError("did not return a pair (output, weights)")
    return np.asarray(out["items"][1]["array"], dtype=np.float64)


def lesson_1(impl: Any, n: int) -> list[tuple[str, np.ndarray]]:
    """The student's self_attention with causal=True (their mask, scaling and softmax)."""
    ids, _ = sentence()
    x = embeddings(ids, np.float64)
    weights = [projection(1, D_K, np.float64), projection(2, D_K, np.float64)]
    kwargs = {"args": [x, *weights, projection(3, D_V, np.float64)], "kwargs": {"causal": True}}
    result = impl.run("call_function", name="self_attention", framework="numpy", **kwargs)
    return [("self_attention(..., causal=True)", pair_weights(result))]


def lesson_2(impl: Any, n: int) -> list[tuple[str, np.ndarray]]:
    ids, _ = sentence()
    result = impl.run(
        "call_function",
        name="simple_attention_matrix",
        args=[embeddings(ids, np.float32) / 2],  # smaller inputs: a map that is not one-hot
        kwargs={},
        framework="torch",
    )
    return [("simple_attention_matrix", pair_weights(result))]


def lesson_3(impl: Any, n: int) -> list[tuple[str, np.ndarray]]:
    """The student's causal_mask fed to the student's ScaledDotProductAttention."""
    ids, _ = sentence()
    mask = impl.run("call_function", name="causal_mask", args=[n], kwargs={}, framework="torch")
    if "array" not in mask["out"]:
        raise ValueError("causal_mask did not return a tensor")
    x = embeddings(ids, np.float32)
    q, k = x @ projection(1, D_K, np.float32), x @ projection(2, D_K, np.float32)
    v = x @ projection(3, D_V, np.float32)
    result = impl.run(
        "run_module",
        name="ScaledDotProductAttention",
        init_args=[],
        inputs=[q[None, None], k[None, None], v[None, None], mask["out"]["array"]],
    )
    weights = pair_weights(result)
    return [("causal_mask + ScaledDotProductAttention", weights.reshape(weights.shape[-2:]))]


def lesson_4(impl: Any, n: int) -> list[tuple[str, np.ndarray]]:
    """Each head's weights, read off the output of the wrapper and of the fused layer.

    The input is each token's position as a one-hot vector followed by its embedding.
    Queries and keys come from the embedding; every head's values are the position
    one-hot, and out_proj is the identity, so output row i of head h is row i of that
    head's attention weights: the weights come out of the student's own forward pass.
    """
    ids, _ = sentence()
    x = np.concatenate([np.eye(n, dtype=np.float32), embeddings(ids, np.float32)], axis=1)
    d_in = x.shape[1]

    def head(h: int) -> dict[str, np.ndarray]:
        features = np.zeros((n, n), dtype=np.float32)
        return {
            "W_query.weight": np.hstack([features, projection(10 + h, n, np.float32).T]),
            "W_key.weight": np.hstack([features, projection(20 + h, n, np.float32).T]),
            "W_value.weight": np.hstack(
                [np.eye(n, dtype=np.float32), np.zeros((n, d_in - n), np.float32)]
            ),
        }

    heads = [head(h) for h in range(HEADS)]
    wrapper_state = {f"heads.{h}.{name}": w for h in range(HEADS) for name, w in heads[h].items()}
    fused_state = {name: np.vstack([heads[h][name] for h in range(HEADS)]) for name in heads[0]} | {
        "out_proj.weight": np.eye(HEADS * n, dtype=np.float32),
        "out_proj.bias": np.zeros(HEADS * n, dtype=np.float32),
    }
    maps = []
    for name, init, state in (
        ("MultiHeadAttentionWrapper", [d_in, n, n, 0.0, HEADS], wrapper_state),
        ("MultiHeadAttention", [d_in, HEADS * n, n, 0.0, HEADS], fused_state),
    ):
        out = impl.run("run_module", name=name, init_args=init, inputs=[x[None]], state=state)
        array = np.asarray(out["out"].get("array"), dtype=np.float64)
        if array.shape != (1, n, HEADS * n):
            raise ValueError(
                f"{name} returned shape {list(array.shape)}, expected [1, {n}, {HEADS * n}]"
            )
        maps += [(f"{name}, head {h}", array[0, :, h * n : (h + 1) * n]) for h in range(HEADS)]
    return maps


PIPELINES = {
    "01_numpy_attention": (lesson_1, True),
    "02_self_attention": (lesson_2, False),
    "03_causal_attention": (lesson_3, True),
    "04_multihead_attention": (lesson_4, True),
}
"""Per lesson: the pipeline that draws its maps, and whether its attention is causal."""


def findings(weights: np.ndarray, reference: np.ndarray, causal: bool) -> list[str]:
    """What anyone can read off the map, spelled out: NaN, rows that do not sum to 1,
    (for causal attention) weight on later tokens, and where it differs from the
    reference's map. Facts about the values only, so a wrong pipeline never passes as right."""
    found = []
    with np.errstate(invalid="ignore"):
        gap = np.nan_to_num(np.abs(weights - reference), nan=np.inf)
    if gap.max() > 1e-4:
        i, j = np.unravel_index(np.argmax(gap), gap.shape)
        found.append(
            f"differs from the reference map by up to {gap[i, j]:.3g} "
            f"(query {i}, key {j}: {weights[i, j]:.3g} instead of {reference[i, j]:.3g})"
        )
    if not np.isfinite(weights).all():
        found.append(f"{int((~np.isfinite(weights)).sum())} weight(s) are NaN or infinite")
    sums = weights.sum(axis=-1)
    if np.isfinite(sums).all() and not np.allclose(sums, 1.0, atol=1e-3):
        found.append(f"rows sum to between {sums.min():.3g} and {sums.max():.3g}, not 1")
    if causal:
        future = np.triu(np.nan_to_num(np.abs(weights), nan=1.0), k=1)
        if future.max() > LEAK:
            i, j = np.unravel_index(np.argmax(future), future.shape)
            found.append(
                f"causal leak: {int((future > LEAK).sum())} weight(s) on later tokens, "
                f"the largest {future[i, j]:.3g} (query {i} looking at key {j})"
            )
    return found


def collect_heatmap(slug: str, submission: Any, reference: Any) -> dict[str, Any] | None:
    """The student's and the reference's attention maps on the same inputs (or why not)."""
    if slug not in PIPELINES:
        return None
    pipeline, causal = PIPELINES[slug]
    _, labels = sentence()
    answers: dict[str, list[tuple[str, np.ndarray]] | str] = {}
    for who, impl in (("reference", reference), ("student", submission)):
        try:
            maps = pipeline(impl, len(labels))
            for title, weights in maps:
                if weights.shape != (len(labels), len(labels)):
                    raise ValueError(f"{title}: weights of shape {list(weights.shape)}")
            answers[who] = maps
        except Exception as exc:  # the student's code may fail in any way: say so instead
            answers[who] = f"{getattr(exc, 'type_name', type(exc).__name__)}: {exc}"[:200]
    reference_maps = answers["reference"]
    if isinstance(reference_maps, str):
        raise RuntimeError(f"the reference pipeline failed: {reference_maps}")
    student = answers["student"]
    maps = []
    for index, (title, expected) in enumerate(reference_maps):
        entry: dict[str, Any] = {"title": title, "reference": expected.tolist()}
        if isinstance(student, str):
            entry |= {"student": None, "student_error": student, "findings": []}
        else:
            weights = student[index][1]
            entry |= {
                "student": weights.tolist(),
                "findings": findings(weights, expected, causal),
            }
        maps.append(entry)
    return {"tokens": labels, "causal": causal, "maps": maps}


# -- rendering --------------------------------------------------------------------------------


def colour(value: float) -> str:
    """A dark-blue to yellow ramp for weights in [0, 1]; red for anything not finite."""
    if not np.isfinite(value):
        return "#d62728"
    t = float(min(max(value, 0.0), 1.0)) ** 0.5  # sqrt: small weights stay visible
    low, high = np.array([38, 16, 92]), np.array([253, 231, 37])
    r, g, b = (low + (high - low) * t).astype(int)
    return f"#{r:02x}{g:02x}{b:02x}"


def svg_heatmap(weights: list[list[float]], tokens: list[str], title: str, causal: bool) -> str:
    """A figure: the title as a caption (it wraps, so no title is ever cut off) over an
    inline SVG grid where row i is query i, column j key j, and colour the weight.

    A weight of exactly 0 (a masked cell) is drawn empty, so colour always means the
    token received attention, and colour above a causal map's dashed diagonal is a leak.
    Labels are drawn at a readable size, with room left for the longest one.
    """
    labels = [html.escape(token.strip() or "␣") for token in tokens]
    longest = max((len(token.strip() or "␣") for token in tokens), default=1)
    cell, font = 34, 14
    left = 16 + int(longest * font * 0.62)
    top = 16 + int(longest * font * 0.62 * 0.87)  # the column labels are slanted by 60°
    n = len(tokens)
    width, height = left + n * cell + 10, top + n * cell + 10
    parts = [
        f'<figure class="map"><figcaption class="t">{html.escape(title)}</figcaption>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)}">',
    ]
    for i, row in enumerate(weights):
        for j, value in enumerate(row):
            label = f"{labels[i]} → {labels[j]}: {value:.3f}"
            style = 'fill="#ffffff" stroke="#dddddd"' if value == 0 else f'fill="{colour(value)}"'
            parts.append(
                f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell - 1}" '
                f'height="{cell - 1}" {style}><title>{label}</title></rect>'
            )
    for k, label in enumerate(labels):
        middle = k * cell + cell / 2
        parts.append(
            f'<text x="{left - 6}" y="{top + middle + 5}" text-anchor="end" '
            f'class="l">{label}</text>'
        )
        parts.append(
            f'<text x="{left + middle}" y="{top - 6}" class="l" '
            f'transform="rotate(-60 {left + middle} {top - 6})">{label}</text>'
        )
    if causal:
        end = n * cell
        parts.append(
            f'<line x1="{left}" y1="{top}" x2="{left + end}" y2="{top + end}" '
            'stroke="#888888" stroke-dasharray="4 3" stroke-width="1"/>'
        )
    parts.append("</svg></figure>")
    return "".join(parts)


def svg_colour_bar(steps: int = 20) -> str:
    """The colour scale, from weight 0 (empty) to 1, drawn with plain rectangles."""
    size, left = 16, 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + (steps + 2) * size + 40}" '
        'height="48" role="img" aria-label="colour scale">',
        f'<rect x="{left}" y="6" width="{size - 1}" height="{size}" fill="#ffffff" '
        'stroke="#dddddd"><title>exactly 0 (masked)</title></rect>',
    ]
    for step in range(1, steps + 1):
        value = step / steps
        parts.append(
            f'<rect x="{left + step * size}" y="6" width="{size}" height="{size}" '
            f'fill="{colour(value)}"><title>{value:.2f}</title></rect>'
        )
    end = left + (steps + 1) * size
    parts += [
        f'<text x="{left}" y="40" class="l">0 (empty: masked)</text>',
        f'<text x="{end}" y="40" class="l" text-anchor="end">1</text>',
        "</svg>",
    ]
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
.maps{display:flex;gap:2rem;flex-wrap:wrap}.map{margin:0;max-width:30rem}
.t{font:600 15px system-ui,sans-serif;margin-bottom:.3rem}
.l{font:14px system-ui,sans-serif}.note{color:#555;font-size:.9rem}
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
    parts += render_heatmaps(record.get("heatmap"))
    if record.get("notes"):
        parts.append("<h2>Notes on your notebook</h2><ul>")
        parts += [f'<li class="note">{e(n)}</li>' for n in record["notes"][:20]]
        parts.append("</ul>")
    parts.append('<p class="note">Generated by attention-kit.</p></body></html>')
    return "\n".join(parts)


def render_heatmaps(heatmap: dict[str, Any] | None) -> list[str]:
    """The maps, the student's beside the reference's, with what they show spelled out."""
    if not heatmap or "maps" not in heatmap:
        return []
    e = html.escape
    parts = [
        "<h2>Attention weights of your code on the opening of <i>The Verdict</i></h2>",
        '<p class="note">Rows are queries, columns keys; each row should sum to 1. An empty '
        "cell is a weight of exactly 0 (masked).</p>",
    ]
    if heatmap.get("causal"):
        parts.append(
            '<p class="note">In causal attention every cell above the dashed diagonal must be '
            "empty: colour there is a token looking at its future.</p>"
        )
    parts.append(svg_colour_bar())
    for entry in heatmap["maps"]:
        maps = []
        if entry.get("student") is not None:
            title = f"Your weights: {entry['title']}"
            maps.append(svg_heatmap(entry["student"], heatmap["tokens"], title, heatmap["causal"]))
        else:
            maps.append(
                f'<p class="note">Your weights for {e(entry["title"])}: not available '
                f"({e(entry.get('student_error', ''))})</p>"
            )
        title = f"Reference weights: {entry['title']}"
        maps.append(svg_heatmap(entry["reference"], heatmap["tokens"], title, heatmap["causal"]))
        parts.append(f'<div class="maps">{"".join(maps)}</div>')
        if entry.get("findings"):
            parts.append('<ul class="findings">')
            parts += [f'<li class="failed">{e(f)}</li>' for f in entry["findings"]]
            parts.append("</ul>")
    return parts


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
