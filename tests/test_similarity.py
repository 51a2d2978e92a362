"""The similarity review of `attnkit report`: copies and renamed copies of the corpora's
notebooks rank above every pair of honest ones; the released notebook never counts; any
file is compared or listed with its reason; everything on the page is escaped; and none of
it reaches a grade, an export or a student."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from test_layering import import_graph, kit_modules
from test_properties import FAST, notebooks

from attnkit.assignments import ASSIGNMENTS
from attnkit_autograder.authoring.corpus import fill_notebook, read_case, released_notebook
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.classes import run_manifest
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.run_manifest import ClassManifest, member
from attnkit_autograder.platforms import similarity
from attnkit_autograder.platforms.similarity import NotCompared, OwnCode, own_code, scored_pairs

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
sys.path.insert(0, str(CORPUS))

import copies  # noqa: E402

SLUG = "02_self_attention"
OPTIONS = {
    "timeout": 60.0, "budget": 600.0, "memory_mb": 2048, "cell_timeout": 30.0,
    "feedback": False, "no_sandbox": False, "sandbox_user": None, "gradebook": None,
}  # fmt: skip


def notebook_bytes(notebook: dict) -> bytes:
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def graded(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """OUT as `attnkit grade` leaves it for the report: class.json listing every file
    (written as SUBMISSIONS/<name>), and a gradebook with a row for each."""
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    found = discover(folder)
    members = tuple(sorted((member(s, folder) for s in found), key=lambda m: m.id))
    manifest = ClassManifest(str(folder), None, OPTIONS, "tests", members)
    run_manifest.write(out, manifest)
    rows = [
        {"student": s.student, "assignment": s.assignment if s.problem is None else None,
         "status": "graded" if s.problem is None else "error", "score": 1.0, "max_score": 1.0,
         "error": s.problem, "source": str(s.path), "tests": []}
        for s in found
    ]  # fmt: skip
    slugs = {r["assignment"] for r in rows if r["assignment"]}
    assignments = {slug: {"title": ASSIGNMENTS[slug].title, "max_score": 1.0} for slug in slugs}
    gradebook = {"schema": "attnkit-grades/1", "assignments": assignments, "submissions": rows}
    (out / "grades.json").write_text(json.dumps(gradebook, indent=1))
    return out


def report(out: Path, *options: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", "report", str(out), *options],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return (out / "report.html").read_text(encoding="utf-8")


def ranked(page: str) -> list[tuple[str, str, int, int]]:
    """(student A, student B, A's share, B's share) of each row of the pairs tables."""
    row = re.compile(
        r"<tr><td class=n>\d+</td><td>(.*?)</td><td>(.*?)</td><td class=n>(\d+)%</td>"
        r"<td class=n>(\d+)%</td>"
    )
    return [(html.unescape(a), html.unescape(b), int(x), int(y)) for a, b, x, y in
            row.findall(page)]  # fmt: skip


# -- the corpora: copies far above honest work ---------------------------------------------------


def test_copies_and_renamed_copies_rank_above_every_honest_pair() -> None:
    """Every lesson: each honest notebook's byte copy and renamed copy score above every
    pair of independently written notebooks, by a clear margin (figures printed)."""
    for figures in copies.measure():
        assert len(figures.honest) >= 28 and len(figures.copies) >= 16
        assert min(figures.copies.values()) >= 0.85, copies.report(figures)
        assert figures.gap >= 0.25, copies.report(figures)


def test_a_renamed_copy_reads_differently_line_by_line() -> None:
    """A renamed copy is no trivial disguise: most of the lesson's own lines read
    differently in it, and every notebook has some (cells that are not plain Python, and
    code outside functions, keep theirs); each cell is the same program (checked as built)."""
    template = similarity.released_template(SLUG)
    kept = total = 0
    for honest in copies.honest_notebooks(SLUG):
        original = own_code(honest.data, honest.file_name, template).splitlines()
        renamed = own_code(honest.renamed, honest.file_name, template).splitlines()
        code = [line for line in renamed if not line.lstrip().startswith("#")]
        same = [line for line in code if line in original]
        assert len(same) < len(code), honest.student
        kept, total = kept + len(same), total + len(code)
    assert kept < 0.3 * total


def mistaken_notebook(path: Path, finished: bool) -> bytes:
    """A mistakes-corpus answer in the released notebook, its other stubs unanswered, or
    (``finished``) answered by the reference, as the kit's grading corpus builds it."""
    case = read_case(path)
    unanswered = {} if finished else {e.name: None for e in ASSIGNMENTS[case.slug].exercises}
    released = released_notebook(case.slug, ROOT / "assignments")
    return notebook_bytes(fill_notebook(released, case.slug, {**unanswered, **case.answers}))


def first(student: str) -> str:
    return student.split("_")[0]


def class_of_40(finished: bool) -> tuple[dict[str, bytes], set[frozenset[str]]]:
    """Lesson 2's class of 40 from the corpora: the honest notebooks (correct, and one
    mistaken), mistaken ones (a mistake, the rest unfinished or the reference's), one of
    them handed in late (a Canvas name), three released notebooks handed in untouched (one
    by a student off the roster), two byte copies and two renamed copies; and the copy
    pairs."""
    files: dict[str, bytes] = {}
    honest = copies.honest_notebooks(SLUG)
    for h in honest:  # named by first name (nadia_colab would read as a renamed copy)
        files[f"{first(h.student)}_{SLUG}{Path(h.file_name).suffix}"] = h.data
    mistakes = sorted((CORPUS / "mistakes").glob("l2_*.py"))
    for number, path in enumerate(mistakes[:-1]):
        files[f"mistaken-{number:02d}_{SLUG}.ipynb"] = mistaken_notebook(path, finished)
    files[f"latecomer_LATE_4242_99_{SLUG}.ipynb"] = mistaken_notebook(mistakes[-1], finished)
    released = released_path(SLUG, ROOT / "assignments").read_bytes()
    for name in ("blank-a", "blank-b", "off-roster"):  # handed in the released notebook
        files[f"{name}_{SLUG}.ipynb"] = released
    pairs = set()
    for h, name in zip(honest[:2], ("copier-a", "copier-b"), strict=True):
        files[f"{name}_{SLUG}{Path(h.file_name).suffix}"] = h.data
        pairs.add(frozenset((first(h.student), name)))
    for h, name in zip(honest[2:4], ("renamer-a", "renamer-b"), strict=True):
        files[f"{name}_{SLUG}{Path(h.file_name).suffix}"] = h.renamed
        pairs.add(frozenset((first(h.student), name)))
    return files, pairs


# -- the released notebook never counts ------------------------------------------------------------


def test_notebooks_of_the_released_code_alone_share_nothing(tmp_path: Path) -> None:
    released = released_path(SLUG, ROOT / "assignments").read_bytes()
    template = similarity.released_template(SLUG)
    assert own_code(released, f"{SLUG}.ipynb", template) == ""
    stubs = [OwnCode(name, own_code(released, f"{SLUG}.ipynb", template)) for name in "abc"]
    assert scored_pairs(stubs, template) == []
    page = report(graded(tmp_path, {f"{n}_{SLUG}.ipynb": released for n in ("ann", "bo", "cy")}))
    assert "3 submission(s) compared" in page and "0 pair(s) score" in page
    assert "<mark>" not in page


def test_given_lines_respaced_or_recommented_stay_given() -> None:
    template = similarity.template_of(["x = f(a, b)  # the book's\nfor i in range(3):\n    pass"])
    assert template.gives("x=f(a,b)") and template.gives("  x = f(a, b)  # mine")
    assert not template.gives("x = f(a, c)") and not template.gives('s = "#" + x')


# -- hostile files -------------------------------------------------------------------------------


def test_hostile_files_are_listed_as_not_compared_and_the_page_renders(tmp_path: Path) -> None:
    honest = copies.honest_notebooks(SLUG)
    copied = honest[0].data
    code = "def softmax(x, dim=-1):\n" + "    x = x + 1\n" * 6000
    plotted = json.loads(honest[3].data)  # graded (outputs do not count), too big to review
    plot = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "A" * 2**25}}
    next(c for c in plotted["cells"] if c["cell_type"] == "code")["outputs"] = [plot]
    files = {
        f"ann_{SLUG}.ipynb": copied,
        f"<script>alert(document.domain)_{SLUG}.ipynb": copied,
        f"latin1_{SLUG}.ipynb": "{'cells': 'caf\xe9'}".encode("latin-1"),
        f"broken_{SLUG}.ipynb": b'{"cells": [',
        f"nul_{SLUG}.ipynb": b"\x00" * 64,
        f"deep_{SLUG}.ipynb": b"[" * 100_000 + b"]" * 100_000,
        f"huge_{SLUG}.py": code.encode(),
        f"changed_{SLUG}.ipynb": honest[1].data,
        f"plotted_{SLUG}.ipynb": notebook_bytes(plotted),
    }
    out = graded(tmp_path, files)
    folder = tmp_path / "submissions"
    (folder / f"linked_{SLUG}.ipynb").symlink_to(folder / f"ann_{SLUG}.ipynb")
    manifest = run_manifest.read(out)
    found = {run_manifest.submission_id(s): s for s in discover(folder)}
    linked = next(s for s in found.values() if s.student == "linked")
    run_manifest.write(out, replace(manifest, members=(*manifest.members, member(linked, folder))))
    (folder / f"changed_{SLUG}.ipynb").write_bytes(honest[2].data)  # after grading
    page = report(out)
    listed = page.split("<ul class=skipped>", 1)[1].split("</ul>", 1)[0]
    reasons = dict(re.findall(r"<li>(.*?): (.*?)</li>", listed))
    assert set(reasons) == {"latin1", "broken", "nul", "deep", "huge", "changed", "linked",
                            "plotted"}  # fmt: skip
    assert "MiB, over the 32 MiB the review reads" in reasons["plotted"]
    assert "not UTF-8" in reasons["latin1"] and "not valid notebook JSON" in reasons["broken"]
    assert "over the 50,000" in reasons["huge"] and reasons["changed"] == "changed since grading"
    assert "symbolic link" in reasons["linked"] and "nests JSON deeper" in reasons["deep"]
    # The copy is found, and its markup-named student is text on the page, never markup.
    top = ranked(page)[0]
    assert {top[0], top[1]} == {"<script>alert(document.domain)", "ann"} and top[2:] == (100, 100)
    assert "<script>" not in page and "&lt;script&gt;alert(document.domain)" in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_code_that_reads_as_markup_is_escaped_in_the_side_by_side_view(tmp_path: Path) -> None:
    released = released_notebook(SLUG, ROOT / "assignments")
    body = 'tag = "</pre><script>alert(1)</script><mark>"\n'
    body += "shifted = x - x.amax(dim=dim, keepdim=True).clamp_min(-1e30)\n"
    body += "e = torch.exp(shifted)\nreturn e / e.sum(dim=dim, keepdim=True)"
    answers = {e.name: None for e in ASSIGNMENTS[SLUG].exercises} | {"softmax": body}
    data = notebook_bytes(fill_notebook(released, SLUG, answers))
    page = report(graded(tmp_path, {f"ann_{SLUG}.ipynb": data, f"bo_{SLUG}.ipynb": data}))
    assert "<script>" not in page and "&lt;/pre&gt;&lt;script&gt;" in page
    assert page.count("<mark>") == page.count("</mark>") >= 2


@FAST
@given(notebooks, st.sampled_from(["s.ipynb", "s.py", "s.IPYNB", "s.ipynb.json"]))
def test_reading_any_file_gives_own_code_or_one_refusal(raw: bytes, name: str) -> None:
    template = similarity.template_of(["import torch", "def f(x):\n    pass"])
    try:
        code = own_code(raw, name, template)
    except NotCompared as exc:
        assert str(exc)
        return
    assert isinstance(code, str) and len(code) <= similarity.MAX_CODE_CHARS
    code.encode("utf-8")  # valid text: no lone surrogate reaches the page
    assert not any(ord(c) < 32 and c not in "\n\t" for c in code)
    for pair in scored_pairs([OwnCode("a", code), OwnCode("b", code + "\nx = 1\n")], template):
        assert all(0 <= share <= 1 for share in pair.similarity)
        assert all(0 <= s < e <= len(code) + 7 for side in pair.spans for s, e in side)


# -- never a grade, an export or a student's ------------------------------------------------------


def test_the_review_writes_nothing_but_the_page(tmp_path: Path) -> None:
    honest = copies.honest_notebooks(SLUG)
    notebooks = [h for h in honest[:4] if h.file_name.endswith(".ipynb")]
    files = {f"{h.student}_{SLUG}.ipynb": h.data for h in notebooks}
    files[f"copier_{SLUG}.ipynb"] = next(iter(files.values()))
    out = graded(tmp_path, files)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    page = report(out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "Similarity review" in page and "copier" in page
    assert set(after) - set(before) == {Path("report.html")}
    assert all(after[p] == data for p, data in before.items())
    assert "Similarity review" not in report(out, "--no-similarity")


def test_no_grade_feedback_or_export_module_reads_the_review() -> None:
    modules = kit_modules(ROOT, {"attnkit_autograder": "autograder", "attnkit": "attnkit"})
    graph = import_graph(modules)

    def reaches(name: str) -> set[str]:
        seen, todo = set(), [name]
        while todo:
            for target in graph.get(todo.pop(), set()) - seen:
                seen.add(target)
                todo.append(target)
        return seen

    review = {
        "attnkit_autograder.platforms.similarity",
        "attnkit_autograder.platforms.similarity_page",
    }
    for name in ("pipeline", "grade_command", "feedback", "lms_export", "gradescope", "results",
                 "merge", "regrade", "nbgrader_gradebook"):  # fmt: skip
        assert not reaches(f"attnkit_autograder.{name}") & review, name
    assert reaches("attnkit_autograder.platforms.class_report") & review


# -- a class of 300 ------------------------------------------------------------------------------


def test_a_big_class_lists_the_most_similar_pairs_only(tmp_path: Path) -> None:
    """60 submissions of one assignment, no two alike as text: the honest notebooks
    renamed each its own way, so every one is fingerprinted and the six or so of each
    notebook are all copies of each other: more pairs than the page lists. (How long a
    class of 300 takes is printed by ``python tests/corpus/copies.py --class-of 300``.)"""
    released = released_notebook(SLUG, ROOT / "assignments")
    bases = [h for h in copies.honest_notebooks(SLUG) if h.file_name.endswith(".ipynb")]
    notebooks = [json.loads(h.data) for h in bases]
    files = {
        f"s{i:03d}_{SLUG}.ipynb": notebook_bytes(
            copies.renamed_notebook(notebooks[i % len(bases)], released, f"s{i}_")
        )
        for i in range(60)
    }
    assert len(set(files.values())) == 60
    out = graded(tmp_path, files)
    start = time.monotonic()
    page = report(out)
    seconds = time.monotonic() - start
    took = re.search(r"compared in ([\d.]+) s", page)
    print(f"report of 60 with the similarity review: {seconds:.1f} s in all, the review "
          f"{took and took[1]} s, {len(page) // 1024} KiB")  # fmt: skip
    assert "60 submission(s) compared" in page
    assert len(ranked(page)) == similarity.MAX_PAIRS and page.count("<h4>Pair") == 10


def test_the_same_class_scores_the_same_in_any_process(tmp_path: Path) -> None:
    """copydetect's own k-gram hash is salted per process; the review's is not (with the
    salted one, the honest pairs listed here score a few points apart from run to run)."""
    honest = copies.honest_notebooks(SLUG)
    files = {f"{first(h.student)}_{SLUG}{Path(h.file_name).suffix}": h.data for h in honest}
    out = graded(tmp_path, files)
    pages = []
    for seed in ("1", "2"):
        environment = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "attnkit", "report", str(out)], check=True,
                       env=environment, capture_output=True)  # fmt: skip
        pages.append(ranked((out / "report.html").read_text(encoding="utf-8")))
    assert pages[0] == pages[1] and len(pages[0]) >= 2


def test_a_copy_padded_with_comments_strings_or_docstrings_is_still_compared(tmp_path) -> None:
    """Bulk that the comparison ignores (comments, long strings) does not count towards the
    review's size limit, so it cannot carry a copy out of the review."""
    honest = next(h for h in copies.honest_notebooks(SLUG) if h.file_name.endswith(".ipynb"))
    original = json.loads(honest.data)
    bulk = "x" * 60_000
    paddings = {
        "comment": "\n".join(f"# {bulk[:100]}" for _ in range(600)),
        "docstring": f'"""{bulk}"""',
        "string": f'_ = "{bulk}"  # padding',
    }
    files = {f"source_{SLUG}.ipynb": honest.data}
    for name, text in paddings.items():
        padded = json.loads(json.dumps(original))
        padded["cells"].append({"cell_type": "code", "execution_count": None, "id": name,
                                "metadata": {}, "outputs": [], "source": [text]})  # fmt: skip
        files[f"{name}_{SLUG}.ipynb"] = notebook_bytes(padded)
    page = report(graded(tmp_path, files))
    assert "Not compared" not in page
    pairs = {frozenset(row[:2]): row[2:] for row in ranked(page)}
    for name in paddings:
        assert min(pairs[frozenset(("source", name))]) >= 90, (name, pairs)
