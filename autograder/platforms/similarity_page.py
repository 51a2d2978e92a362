"""The "Similarity review" section of ``attnkit report`` (see :mod:`.similarity`): per
assignment, the ranked pairs, the most similar side by side with their matched regions
marked, and who was not compared. Every student text is escaped; no script, nothing
fetched."""

from __future__ import annotations

import html

from ..classes.run_manifest import ClassManifest
from .similarity import (
    LISTED,
    MIN_MATCHED,
    SHOWN_CHARS,
    SIDE_BY_SIDE,
    Pair,
    Review,
    Skipped,
    review_class,
)


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


STYLE = """.sbs{display:flex;gap:1em;margin:.4em 0 1.4em}.sbs>div{flex:1;min-width:0}
.sbs pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:32em;font-size:.8em;
white-space:pre-wrap;word-break:break-all}mark{background:#ffd45c}"""

NOTICE = (
    "For review, not an accusation. A share is how much of one submission's own code "
    "(its code cells less the released notebook's code) is also found in the other's, names, "
    "layout and comments aside. These exercises are short and can be written in few ways, so "
    "honest work matches in places: read the code before drawing any conclusion. Nothing here "
    "changes a grade, and none of it is in grades.json, the exports or any student's feedback."
)


def marked(code: str, regions: tuple[tuple[int, int], ...]) -> str:
    """``code`` as HTML text, each matched region in ``<mark>``, cut at SHOWN_CHARS."""
    shown = code[:SHOWN_CHARS]
    parts, at = [], 0
    for start, end in regions:
        start, end = max(start, at), min(end, len(shown))
        if end <= start:
            continue
        parts += [e(shown[at:start]), "<mark>", e(shown[start:end]), "</mark>"]
        at = end
    parts.append(e(shown[at:]))
    if len(code) > len(shown):
        parts.append(f"\n… {len(code) - len(shown):,} more characters not shown")
    return "".join(parts)


def pair_rows(review: Review) -> list[str]:
    rows = [
        "<table><tr><th>#</th><th>student A</th><th>student B</th><th>A's code found in B</th>"
        "<th>B's code found in A</th><th>matched tokens</th></tr>"
    ]
    for number, pair in enumerate(review.listed, 1):
        rows.append(
            f"<tr><td class=n>{number}</td><td>{e(pair.a.student)}</td><td>{e(pair.b.student)}"
            f"</td><td class=n>{pair.similarity[0]:.0%}</td><td class=n>"
            f"{pair.similarity[1]:.0%}</td><td class=n>{pair.matched}</td></tr>"
        )
    rows.append("</table>")
    return rows


def side_by_side(number: int, pair: Pair) -> str:
    sides = "".join(
        f"<div><b>{e(own.student)}</b> ({share:.0%} found in the other)"
        f"<pre>{marked(own.code, regions)}</pre></div>"
        for own, share, regions in zip((pair.a, pair.b), pair.similarity, pair.spans, strict=True)
    )
    return f"<h4>Pair {number}</h4><div class=sbs>{sides}</div>"


def review_html(review: Review) -> list[str]:
    """One assignment's part of the section: the ranked pairs, the top ones side by side,
    and who was not compared."""
    parts = [f"<h3>{e(review.assignment)}</h3>"]
    summary = (
        f"{review.compared} submission(s) compared in {review.seconds:.1f} s; "
        f"{review.above} pair(s) score {LISTED:.0%} or more (the mean of the two shares) "
        f"with {MIN_MATCHED} tokens or more matched"
    )
    if review.above > len(review.listed):
        summary += f" (the {len(review.listed)} most similar are listed)"
    parts.append(f"<p>{e(summary)}.</p>")
    if review.listed:
        parts += pair_rows(review)
        parts += [side_by_side(n, p) for n, p in enumerate(review.listed[:SIDE_BY_SIDE], 1)]
    parts += not_compared(review.skipped)
    return parts


def not_compared(skipped: tuple[Skipped, ...] | list[Skipped]) -> list[str]:
    if not skipped:
        return []
    items = "".join(
        f"<li>{e(s.who)}: {e(s.reason[:400])}</li>"
        for s in sorted(skipped, key=lambda s: (s.who, s.reason))
    )
    return [f"<p>Not compared, and why:</p><ul class=skipped>{items}</ul>"]


def section(manifest: ClassManifest | None) -> list[str]:
    """The report's "Similarity review" section, as HTML parts (see the module's docstring).
    Never raises for what the submissions hold."""
    parts = [f"<h2>Similarity review</h2><p>{e(NOTICE)}</p>"]
    if manifest is None:
        parts.append(
            "<p class=muted>OUT holds no class.json, which lists the files graded: nothing "
            "was compared.</p>"
        )
        return parts
    reviews, elsewhere = review_class(manifest)
    if not reviews and not elsewhere:
        parts.append("<p class=muted>The class holds no submission to compare.</p>")
    for review in reviews:
        parts += review_html(review)
    parts += not_compared(elsewhere)
    return parts
