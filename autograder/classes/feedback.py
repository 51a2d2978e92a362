"""Per-student feedback: a self-contained HTML report and a plain-text summary.

``attnkit grade ... --feedback`` writes, for every graded submission,
``OUT/feedback/<student>/<assignment>.html`` and ``.txt``. The HTML has the score per
exercise, each graded cell's status, message and hint (naming the classic mistake when
one matches), and heatmaps of the attention weights that the student's own pipeline
produces on the opening words of The Verdict, beside the reference's on the same inputs:
lesson 3 runs the student's mask through the student's attention, lesson 4 draws one map
per head for the wrapper and for the fused layer (collected by
:mod:`attnkit_autograder.grading.heatmaps`; this module only renders).

The report loads nothing: styles are inline and the heatmaps are inline SVG, so it opens
offline and in a sandboxed LMS viewer. Every piece of text that can come from a student
(exception messages, notes) is escaped. Messages are the grader's own (built from what
failed, with a few numbers at most), so no hidden test's source can appear.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.assignments import ASSIGNMENTS

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
        # An ungradable file's reason is said once, above the table, not under every cell.
        said_above = record.get("status") == "error"
        detail = e(test["message"]) if test["message"] and not said_above else ""
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
            f"<td>{earned(test, ' / ')}</td>"
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
    if isinstance(record.get("late"), dict) and record["late"].get("penalty_percent"):
        parts.append(
            f'<p class="late">The tests gave {record["raw_score"]:g}. '
            f"Late: {e(record['late']['reason'])}</p>"
        )
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


def earned(test: dict[str, Any], between: str) -> str:
    """What a graded cell earned, and of how many of its hidden tests, when some failed:
    ``2 / 3 (2 of 3 checks passed)``."""
    text = f"{test['points']:g}{between}{test['max_points']:g}"
    passed, total = test.get("checks_passed", 0), test.get("checks_total", 0)
    if total and passed < total:
        text += f" ({passed} of {total} checks passed)"
    return text


def render_text(record: dict[str, Any]) -> str:
    """A plain-text summary for an LMS comment box."""
    slug = record.get("assignment")
    title = ASSIGNMENTS[slug].title if slug in ASSIGNMENTS else str(slug)
    lines = [f"{title}: {record['score']:g} / {record['max_score']:g}"]
    if isinstance(record.get("late"), dict) and record["late"].get("penalty_percent"):
        lines.append(f"The tests gave {record['raw_score']:g}. Late: {record['late']['reason']}")
    if record["status"] == "error":
        lines.append(f"Could not be graded: {record['error']}")
    for test in record["tests"]:
        lines.append(
            f"- {test['exercise']} ({test['grade_id']}): {test['status']}, {earned(test, '/')}"
        )
        if test["status"] != "passed" and test["message"] and record["status"] != "error":
            lines.append(f"    {test['message']}")  # an ungradable file's reason is said once
        if test.get("diagnosis"):
            lines.append(f"    Looks like a classic mistake: {test['diagnosis']['title']}.")
        if test.get("hint"):
            lines.append(f"    Hint: {test['hint']}")
    return "\n".join(lines) + "\n"


def write_feedback(out: Path) -> list[Path]:
    """Render feedback for every result under OUT/results (atomically, like everything)."""
    import json

    from . import late, run_manifest
    from .results import write_atomic

    manifest = run_manifest.read_if_any(out)
    adjust = None if manifest is None else late.gradebook_adjuster(manifest, out)
    written = []
    for path in sorted((out / "results").glob("*/*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if adjust is not None and isinstance(record, dict):
            record = adjust(path, record)  # the score the gradebook holds, and why
        target = out / "feedback" / path.parent.name / path.stem
        write_atomic(target.with_suffix(".html"), render_html(record))
        write_atomic(target.with_suffix(".txt"), render_text(record))
        written.append(target.with_suffix(".html"))
    return written
