"""The feedback heatmaps show the student's own pipeline, and never look right when it is wrong.

Each map is computed through the adapters from what the student's code returned for
inputs the grader chose. These tests build notebooks from the diagnosis corpus (and the
references), load their definitions here and draw the maps in this process.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnkit.diagnosis import quiet
from attnkit.implementation import LocalImplementation
from attnkit.notebook_run import load_definitions
from attnkit_autograder.authoring.corpus import case_notebook, read_case, write_notebook
from attnkit_autograder.classes.feedback import render_heatmaps
from attnkit_autograder.grading.harness import reference_implementation
from attnkit_autograder.grading.heatmaps import collect_heatmap

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "mistakes"


def student(name: str, tmp_path: Path) -> tuple[str, LocalImplementation]:
    case = read_case(CORPUS / f"{name}.py")
    path = write_notebook(case_notebook(case, ROOT / "assignments"), tmp_path / f"{name}.ipynb")
    with contextlib.redirect_stdout(io.StringIO()), quiet():
        namespace, _, _ = load_definitions(path)
    return case.slug, LocalImplementation(namespace, name)


def heatmap(slug: str, impl: Any) -> dict[str, Any]:
    with quiet():
        found = collect_heatmap(slug, impl, reference_implementation(slug))
    assert found is not None
    return found


def student_svgs(page: str) -> list[str]:
    return re.findall(r'<svg[^>]*aria-label="Your weights[^"]*".*?</svg>', page, re.S)


def cells(svg: str) -> list[str]:
    return re.findall(r"<rect [^>]*>", svg)


@pytest.mark.parametrize(
    ("name", "maps"),
    [("ok1_loops", 1), ("ok2_copy_loop", 3), ("ok3_causal_styles", 1), ("ok4_mha_styles", 4)],
)
def test_a_correct_pipeline_draws_the_reference_maps_without_findings(name, maps, tmp_path):
    slug, impl = student(name, tmp_path)
    found = heatmap(slug, impl)
    assert len(found["maps"]) == maps
    for entry in found["maps"]:
        assert np.allclose(entry["student"], entry["reference"], atol=1e-5)
        assert entry["findings"] == []
    page = "".join(render_heatmaps(found))
    assert "colour scale" in page and "differs" not in page and "leak" not in page


def test_lesson_4_has_one_map_per_head_for_the_wrapper_and_the_fused_layer(tmp_path):
    slug, impl = student("ok4_mha_styles", tmp_path)
    titles = [entry["title"] for entry in heatmap(slug, impl)["maps"]]
    assert titles == [
        "MultiHeadAttentionWrapper, head 0",
        "MultiHeadAttentionWrapper, head 1",
        "MultiHeadAttention, head 0",
        "MultiHeadAttention, head 1",
    ]
    # The heads attend differently, so a head permutation cannot hide.
    maps = heatmap(slug, impl)["maps"]
    assert not np.allclose(maps[0]["reference"], maps[1]["reference"], atol=1e-3)


def test_masked_cells_are_drawn_empty_and_visible_ones_coloured(tmp_path):
    slug, impl = student("ok3_causal_styles", tmp_path)
    svg = student_svgs("".join(render_heatmaps(heatmap(slug, impl))))[0]
    rects = cells(svg)
    n = int(len(rects) ** 0.5)
    for index, rect in enumerate(rects):
        i, j = divmod(index, n)
        assert ('fill="#ffffff"' in rect) == (j > i), (i, j, rect)


def test_a_wrong_mask_shows_its_leak_in_the_lesson_3_report(tmp_path):
    """The student's wrong-triangle mask goes through the student's attention: the map shows
    colour above the diagonal and says so, while the reference map beside it does not."""
    slug, impl = student("l3_mask_lower", tmp_path)
    found = heatmap(slug, impl)
    (entry,) = found["maps"]
    weights = np.array(entry["student"])
    assert np.triu(weights, k=1).max() > 0.1
    assert any(f.startswith("causal leak") for f in entry["findings"])
    page = "".join(render_heatmaps(found))
    rects = cells(student_svgs(page)[0])
    n = int(len(rects) ** 0.5)
    above = [rects[i * n + j] for i in range(n) for j in range(i + 1, n)]
    assert sum('fill="#ffffff"' not in r for r in above) >= n  # coloured future cells
    assert "causal leak" in page


@pytest.mark.parametrize(
    "name",
    [
        "x3_sdpa_scale_by_dv",  # invisible when d_k == d_v: the inputs have d_k != d_v
        "l3_apply_zero",
        "l3_sdpa_zero_after",
        "l4_wrapper_rotated",
        "l4_mha_scale_total",
        "l1_attention_zero_fill",
        "l1_dep_scale_helper",
    ],
)
def test_a_wrong_pipeline_never_looks_right(name, tmp_path):
    """Where the student's pipeline changes the weights, some map says how."""
    slug, impl = student(name, tmp_path)
    maps = heatmap(slug, impl)["maps"]
    if name == "l3_apply_zero":  # apply_causal_mask is not part of this pipeline
        assert all(entry["findings"] == [] for entry in maps)
        return
    assert any(entry["findings"] for entry in maps)
    for entry in maps:
        same = np.allclose(entry["student"], entry["reference"], atol=1e-4)
        assert same == (entry["findings"] == [])


def test_a_failing_pipeline_says_why_instead_of_drawing(tmp_path):
    slug, impl = student("l3_sdpa_k_T", tmp_path)
    (entry,) = heatmap(slug, impl)["maps"]
    assert entry["student"] is None and "Error" in entry["student_error"]
    page = "".join(render_heatmaps(heatmap(slug, impl)))
    assert "not available" in page and len(student_svgs(page)) == 0


def test_titles_are_captions_and_labels_are_readable(tmp_path):
    """A title as SVG text is clipped at the map's width; as a caption it wraps. Token
    labels are drawn at the body text's size, with room for the longest one."""
    from attnkit_autograder.classes.feedback import STYLE

    slug, impl = student("ok4_mha_styles", tmp_path)
    found = heatmap(slug, impl)
    page = "".join(render_heatmaps(found))
    for entry in found["maps"]:
        assert f'<figcaption class="t">Your weights: {entry["title"]}</figcaption>' in page
    assert "<text" not in page.split("<svg", 1)[0]
    assert all('class="t"' not in svg for svg in re.findall(r"<svg.*?</svg>", page, re.S))
    size = int(re.search(r"\.l\{font:(\d+)px", STYLE).group(1))
    assert size >= 13
    widest = max(len(t.strip()) for t in found["tokens"])
    for svg in re.findall(r"<svg.*?</svg>", page, re.S)[1:]:  # the colour bar comes first
        first_cell = int(re.search(r'<rect x="(\d+)"', svg).group(1))
        assert first_cell >= widest * size * 0.6


def test_lesson_2_draws_the_exercise_that_failed(tmp_path):
    """A SelfAttention_v1 without scaling: the v1 map says how it differs, the maps of the
    exercises that are right (simple_attention_matrix, v2) say nothing."""
    slug, impl = student("l2_v1_unscaled", tmp_path)
    maps = {entry["title"]: entry for entry in heatmap(slug, impl)["maps"]}
    assert set(maps) == {"simple_attention_matrix", "SelfAttention_v1", "SelfAttention_v2"}
    assert maps["SelfAttention_v1"]["findings"]
    assert maps["simple_attention_matrix"]["findings"] == []
    assert maps["SelfAttention_v2"]["findings"] == []
