"""``attnkit report``: one self-contained HTML page about a graded class, for the instructor.

What an instructor takes to the next lecture, from the kit's own records only:

* a score histogram per assignment (inline SVG: no network, no script);
* the pass rate of every graded cell, weakest first;
* the named mistakes, most common first: how many students made each, and one example
  message ("32% of the class forgot the max-subtraction");
* who could not be graded, and why (a submission's fault, or the grader's);
* the run's facts: the isolation, the time per submission, the kit version;
* a similarity review: pairs of submissions that share their own code, ranked, with the
  matched regions side by side, for the instructor to read (see :mod:`.similarity`;
  ``--no-similarity`` leaves it out).

Every text that came from a student (ids, messages) is escaped; the page is
``OUT/report.html``, written atomically.
"""

from __future__ import annotations

import html
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ..classes import results, run_manifest
from ..classes.run_manifest import ClassManifest
from .nbgrader_gradebook import with_manual_grades


def e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def histogram(scores: list[float], max_score: float, title: str) -> str:
    """An SVG bar chart of ``scores`` from 0 to ``max_score``: a bar a point, or 51 bars of
    equal width for a larger scale."""
    bins = min(int(max_score), 50) + 1  # at most 51 bars, however many points
    step = max(max_score / (bins - 1), 1.0) if bins > 1 else 1.0
    counts = Counter(min(int(s / step), bins - 1) for s in scores)
    tallest = max(counts.values(), default=1)

    def low(b: int) -> str:  # the bin's first score
        return f"{b * step:g}" if step == 1.0 else f"{b * step:.0f}"

    width, height, bar = 640, 190, 640 / bins
    bars = []
    for b in range(bins):
        h = 140 * counts.get(b, 0) / tallest  # 20 px above the tallest bar for its count
        x = b * bar
        bars.append(
            f'<rect x="{x + 2:.1f}" y="{165 - h:.1f}" width="{bar - 4:.1f}" height="{h:.1f}" '
            f'fill="#3b6ea5"><title>{low(b)} points: {counts.get(b, 0)}</title></rect>'
            f'<text x="{x + bar / 2:.1f}" y="182" font-size="11" '
            f'text-anchor="middle">{low(b)}</text>'
        )
        if counts.get(b):
            bars.append(
                f'<text x="{x + bar / 2:.1f}" y="{160 - h:.1f}" font-size="11" '
                f'text-anchor="middle">{counts[b]}</text>'
            )
    return (
        f'<svg role="img" aria-label="{e(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        + "".join(bars)
        + "</svg>"
    )


def cell_rates(records: list[dict[str, Any]]) -> list[tuple[float, str, str, int, int]]:
    """(pass rate, assignment, grade_id, passed, total) per graded cell, weakest first."""
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        if record.get("status") != "graded":
            continue
        for test in record.get("tests", []):
            counts = tally[(str(record.get("assignment") or ""), test["grade_id"])]
            counts[0] += test.get("status") == "passed"
            counts[1] += 1
    rows = [(p / t, slug, gid, p, t) for (slug, gid), (p, t) in tally.items() if t]
    return sorted(rows)


def named_mistakes(records: list[dict[str, Any]]) -> list[tuple[int, str, str, str, int]]:
    """(students, assignment, mistake, example message, class size) per named mistake,
    most common first; a student counts once per mistake."""
    who: dict[tuple[str, str], set[str]] = defaultdict(set)
    example: dict[tuple[str, str], str] = {}
    size: Counter[str] = Counter()
    for record in records:
        if record.get("status") != "graded":
            continue
        slug = str(record.get("assignment") or "")
        size[slug] += 1
        for test in record.get("tests", []):
            diagnosis = test.get("diagnosis")
            if isinstance(diagnosis, dict) and diagnosis.get("title"):
                key = (slug, str(diagnosis["title"]))
                who[key].add(record["student"])
                example.setdefault(key, str(test.get("message") or diagnosis.get("symptom", "")))
    rows = [
        (len(students), slug, title, example[(slug, title)], size[slug])
        for (slug, title), students in who.items()
    ]
    return sorted(rows, key=lambda r: (-r[0], r[1], r[2]))


def run_facts(out: Path, manifest: ClassManifest | None) -> list[str]:
    """The isolation, the seconds per submission and the kit, from OUT's own files."""
    facts = []
    seconds, sandboxes = [], Counter()
    for path in results.result_paths(out):
        record = results.read_record(path)
        if record is None:
            continue
        run = record.get("run")
        if isinstance(run, dict) and isinstance(run.get("seconds"), int | float):
            seconds.append(float(run["seconds"]))
        sandboxes[str(record.get("sandbox") or "not run (the file was refused)")] += 1
    if sandboxes:
        facts.append("isolation: " + ", ".join(f"{k} ({v})" for k, v in sandboxes.most_common()))
    if seconds:
        facts.append(
            f"time per submission: median {statistics.median(seconds):.2f} s, "
            f"slowest {max(seconds):.1f} s ({len(seconds)} results)"
        )
    if manifest is not None:
        facts.append(f"kit {manifest.kit_version}, hidden tests {manifest.hidden_tests}")
        if manifest.merged_from:
            facts.append(f"merged from {len(manifest.merged_from)} shards")
    return facts


STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:980px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.25em .6em;border-bottom:1px solid #eee;
text-align:left;vertical-align:top}td.n{text-align:right}.bar{background:#3b6ea5;height:.8em}
.weak{color:#a33}.muted{color:#777}"""


def late_summary(records: list[dict[str, Any]]) -> list[str]:
    """One line on the late policy's effect on an assignment (the histogram shows final
    scores), or nothing when no policy was applied."""
    verdicts = [r["late"] for r in records if isinstance(r.get("late"), dict)]
    if not verdicts:
        return []
    late = sum(v.get("status") == "late" for v in verdicts)
    lost = [
        r for r in records if isinstance(r.get("late"), dict) and r["late"].get("penalty_percent")
    ]
    unread = sum(v.get("status") == "unreadable time" for v in verdicts)
    text = f"Late policy: {late} handed in late, {len(lost)} lost points"
    if lost:
        points = sum(float(r["raw_score"]) - float(r["score"]) for r in lost)
        text += f" ({points:g} points in all)"
    if unread:
        text += f"; {unread} submission time(s) could not be read (raw score kept)"
    return [f"<p>{e(text)}.</p>"]


def render(out: Path, review_similarity: bool = True) -> str:
    """The whole page, one section after the other."""
    from . import similarity_page

    grades = with_manual_grades(out, results.read_gradebook(out))
    manifest = run_manifest.read_if_any(out)
    records = [r for r in grades.get("submissions", []) if isinstance(r, dict)]
    head = "<!doctype html><meta charset=utf-8><title>Class report</title>"
    parts = [
        f"{head}<style>{STYLE}{similarity_page.STYLE if review_similarity else ''}</style>",
        f"<h1>Class report: {len(records)} submission(s)</h1>",
        *score_sections(grades, records),
        *pass_rate_section(records),
        *mistakes_section(records),
        *ungraded_section(records, missing_results(out, manifest)),
        *manual_section(records),
    ]
    if review_similarity:
        parts += similarity_page.section(manifest)
    facts = run_facts(out, manifest) or [f"{out} holds no result files or class.json to tell"]
    parts += ["<h2>Run</h2><ul>", *(f"<li>{e(fact)}</li>" for fact in facts), "</ul>"]
    return "\n".join(parts) + "\n"


def manual_section(records: list[dict[str, Any]]) -> list[str]:
    """The points and comments given by hand in nbgrader's formgrader (already in the
    scores above), or nothing when there are none."""
    manual = [r for r in records if isinstance(r.get("manual"), dict)]
    if not manual:
        return []
    parts = ["<h2>Graded by hand (nbgrader)</h2><table><tr><th>student</th><th>assignment</th>"
             "<th>points added</th><th>comments</th></tr>"]  # fmt: skip
    for r in manual:
        comments = "<br>".join(e(str(c)[:400]) for c in r["manual"]["comments"])
        parts.append(
            f"<tr><td>{e(r['student'])}</td><td>{e(r.get('assignment') or '')}</td>"
            f"<td class=n>{r['manual']['points']:+g}</td><td>{comments}</td></tr>"
        )
    return [*parts, "</table>"]


def score_sections(grades: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
    """Per assignment: how many were graded, the mean, the late policy's work, a histogram."""
    parts = []
    for slug, info in sorted(grades.get("assignments", {}).items()):
        scores = [
            float(r["score"])
            for r in records
            if r.get("assignment") == slug and r.get("status") == "graded"
        ]
        mean = f", mean {statistics.mean(scores):.1f}" if scores else ""
        parts.append(f"<h2>{e(info['title'])} ({e(slug)})</h2>")
        parts.append(f"<p>{len(scores)} graded, out of {info['max_score']:g} points{mean}</p>")
        parts += late_summary([r for r in records if r.get("assignment") == slug])
        parts.append(histogram(scores, float(info["max_score"]), f"scores of {slug}"))
    return parts


def pass_rate_section(records: list[dict[str, Any]]) -> list[str]:
    parts = [
        "<h2>Pass rate per graded cell, weakest first</h2><table>",
        "<tr><th>assignment</th><th>graded cell</th><th>passed</th><th></th></tr>",
    ]
    for rate, slug, grade_id, passed, total in cell_rates(records):
        weak = ' class="weak"' if rate < 0.5 else ""
        parts.append(
            f"<tr{weak}><td>{e(slug)}</td><td>{e(grade_id)}</td><td class=n>{passed}/{total} "
            f"({rate:.0%})</td><td><div class=bar style='width:{rate * 200:.0f}px'></div></td></tr>"
        )
    return [*parts, "</table>"]


def mistakes_section(records: list[dict[str, Any]]) -> list[str]:
    parts = ["<h2>Named mistakes, most common first</h2>"]
    mistakes = named_mistakes(records)
    if not mistakes:
        return [*parts, "<p class=muted>No catalogued mistake was named.</p>"]
    parts.append(
        "<table><tr><th>students</th><th>assignment</th><th>mistake</th>"
        "<th>an example message</th></tr>"
    )
    for count, slug, title, message, size in mistakes:
        parts.append(
            f"<tr><td class=n>{count} ({count / size:.0%} of the class)</td><td>{e(slug)}</td>"
            f"<td>{e(title)}</td><td>{e(message[:300])}</td></tr>"
        )
    return [*parts, "</table>"]


def ungraded_section(records: list[dict[str, Any]], missing: list[tuple[str, str]]) -> list[str]:
    """Who could not be graded: an error record, or no current result at all."""
    parts = ["<h2>Could not be graded</h2>"]
    failed = [r for r in records if r.get("status") != "graded"]
    if not failed and not missing:
        return [*parts, "<p class=muted>Every submission was graded.</p>"]
    parts.append("<table><tr><th>student</th><th>assignment</th><th>why</th></tr>")
    for r in failed:
        parts.append(
            f"<tr><td>{e(r['student'])}</td><td>{e(r.get('assignment') or '')}</td>"
            f"<td>{e(str(r.get('error'))[:400])}</td></tr>"
        )
    for who, why in missing:
        parts.append(f"<tr><td>{e(who)}</td><td></td><td>{e(why)}</td></tr>")
    return [*parts, "</table>"]


def missing_results(out: Path, manifest: ClassManifest | None) -> list[tuple[str, str]]:
    """Members of OUT's class with no current result (the grader's failures), with why."""
    missing = []
    for member in manifest.members if manifest is not None else ():
        why = results.why_not_current(out / member.result, member.sha256, manifest.stamp)
        if why is not None:
            missing.append((member.id.removesuffix(".json"), why))
    return missing
