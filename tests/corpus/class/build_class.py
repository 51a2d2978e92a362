"""Build a class of 40 lesson-2 submissions for the class tools, in nbgrader's layout.

    python tests/corpus/class/build_class.py CLASS_DIR

writes ``CLASS_DIR/submitted/<student>/02_self_attention/02_self_attention.ipynb`` with
nbgrader's ``timestamp.txt`` beside each, ``CLASS_DIR/roster.csv`` (a Canvas gradebook
export), ``CLASS_DIR/late-policy.toml``, ``CLASS_DIR/course-secret`` (for
``--seed-per-student``) and ``CLASS_DIR/expected.json`` (what each student is, for tests).

The class, all built from the kit's corpora of independently written submissions:

* correct: the fairness corpus's lesson-2 students and ``class/02_self_attention/correct_*``;
* mistaken: ``class/02_self_attention/mistaken_*`` (one honest mistake each);
* copied: three students hand in a classmate's file byte for byte;
* renamed copies: three students hand in a classmate's notebook with every local variable
  renamed and the code reformatted (comments gone), as students disguise a copy;
* late: six students hand in after the deadline (one of them has an extension);
* off-roster: ``visitor``, who is on no roster.
"""

from __future__ import annotations

import ast
import builtins
import csv
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fair"))

import builder  # noqa: E402  (the fairness corpus's builder: same file format)

SLUG = "02_self_attention"
DEADLINE = "2026-11-20T23:59:00+00:00"
ON_TIME = "2026-11-20 18:00:00.000000 UTC"
POLICY = f"""\
# The late policy of the class of 40 (attnkit grade --late-policy).
[late]
penalty_per_day = 10   # percent of the points possible per day late, or part of a day
max_penalty = 30       # at most 30%
grace_minutes = 15

[late.deadlines]
{SLUG} = {DEADLINE}

[late.extensions]
noor = 3               # three more days
"""
LATE_TIMES = [  # (timestamp, days late after grace and extensions, penalty %)
    ("2026-11-21 00:10:00.000000 UTC", 0, 0),  # within the grace
    ("2026-11-21 09:30:00.000000 UTC", 1, 10),
    ("2026-11-22 12:00:00.000000 UTC", 2, 20),
    ("2026-11-25 08:00:00.000000 UTC", 5, 30),  # capped at 30%
    ("2026-11-24 00:30:00.000000 UTC", 4, 30),
    ("2026-11-23 20:00:00.000000 UTC", 0, 0),  # noor: three days' extension
]
OFF_ROSTER = "visitor"
RENAMERS = ("arjun", "maya", "diego")
SIZE = 40


FAIR = ("kofi_matmul", "lena_einsum_helpers", "malik_lookalike_names", "nadia_colab",
        "oscar_end_cells", "priya_vscode_crlf", "quinn_py_export", "rosa_new_cells_below",
        "sven_large_negative", "tomas_loops")  # fmt: skip
"""The fairness corpus's students in the class: a fixed ten, so that a case added to that
corpus does not reshape the class the tests below count on."""


def sources() -> list[Path]:
    fair = sorted(HERE.parent / "fair" / SLUG / f"{name}.py" for name in FAIR)
    own = sorted((HERE / SLUG).glob("*.py"))
    return fair + own


class Renamer(ast.NodeTransformer):
    """Renames every local variable of every function (parameters kept: callers name them)."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        params = {a.arg for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]}
        stored = {
            n.id
            for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in params
        }
        mapping = {name: f"tmp_{i}" for i, name in enumerate(sorted(stored))}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in mapping and not hasattr(builtins, n.id):
                n.id = mapping[n.id]
        return node


def renamed(notebook: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(notebook))
    for cell in copy["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # a cell with IPython magics stays as it is
        if not any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in ast.walk(tree)):
            continue
        text = ast.unparse(Renamer().visit(tree)) + "\n"
        cell["source"] = text.splitlines(keepends=True)
    return copy


def notebook_bytes(notebook: dict[str, Any]) -> bytes:
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def hand_in(folder: Path, student: str, data: bytes, when: str) -> None:
    where = folder / "submitted" / student / SLUG
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{SLUG}.ipynb").write_bytes(data)
    (where / "timestamp.txt").write_text(when + "\n")


def cast(built: dict[str, Any]) -> tuple[dict[str, str], dict[str, str], dict[str, tuple]]:
    """(each original's role, who copies whom, who is late and how): the fairness corpus's
    students are copied and late as well as the class corpus's own."""
    own_correct = sorted(n for n in built if n.startswith("correct_"))
    own_mistaken = sorted(n for n in built if n.startswith("mistaken_"))
    fair = sorted(n for n in built if n not in own_correct and n not in own_mistaken)
    roles = {n: "mistaken" if n in own_mistaken else "correct" for n in built}
    copies = {
        "wanjiru": fair[0], "liam": own_correct[0], "sofia": own_mistaken[0], "noor": fair[1],
        "arjun": fair[-1], "maya": own_correct[1], "diego": own_mistaken[1],
    }  # fmt: skip
    late_students = [own_correct[0], own_correct[1], own_mistaken[0], fair[3], fair[-1], "noor"]
    return roles, copies, dict(zip(late_students, LATE_TIMES, strict=True))


def build_class(folder: Path) -> dict[str, Any]:
    """Write the class into ``folder``; return what expected.json holds."""
    built = {b.name: b for b in map(builder.build, sources())}
    roles, copies, late = cast(built)
    # Students go by their first names: kofi_matmul is kofi, correct_adaeze is adaeze.
    first = {name: name.removeprefix("correct_").removeprefix("mistaken_").split("_")[0]
             for name in built}  # fmt: skip
    assert len(set(first.values())) == len(first), "two corpus students share a first name"
    built = {first[n]: b for n, b in built.items()}
    roles = {first[n]: r for n, r in roles.items()}
    copies = {c: first[v] for c, v in copies.items()}
    late = {first.get(n, n): t for n, t in late.items()}
    data = {name: notebook_bytes(b.notebook) for name, b in built.items()}
    for copier, victim in copies.items():
        if copier in RENAMERS:
            data[copier], roles[copier] = notebook_bytes(renamed(built[victim].notebook)), "renamed"
        else:
            data[copier], roles[copier] = data[victim], "copied"
    # The visitor is one of the correct students under another name: on no roster.
    visitor = next(n for n in sorted(built) if roles[n] == "correct" and n not in copies.values()
                   and n not in late)  # fmt: skip
    data[OFF_ROSTER], roles[OFF_ROSTER] = data.pop(visitor), "off-roster"
    del roles[visitor]
    keep = {*copies.values(), *late}
    while len(data) > SIZE:  # the class is 40: drop originals nobody copied, last first
        drop = next(n for n in sorted(built, reverse=True) if n in data and n not in keep)
        del data[drop], roles[drop]
    for student, content in data.items():
        hand_in(folder, student, content, late.get(student, (ON_TIME,))[0])
    write_roster(folder / "roster.csv", sorted(s for s in data if s != OFF_ROSTER))
    (folder / "late-policy.toml").write_text(POLICY)
    secret = folder / "course-secret"
    secret.write_text("a class of 40: keep this file private\n")
    os.chmod(secret, 0o600)
    return {
        "roles": roles,
        "copies": copies,
        "late": {s: {"days": d, "percent": p} for s, (_, d, p) in late.items()},
        "off_roster": OFF_ROSTER,
    }


def write_roster(path: Path, students: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"])
        writer.writerow(["    Points Possible", "", "", "", ""])
        for number, student in enumerate(students, 1001):
            name = student.split("_")[-1].title()
            writer.writerow([f"{name}, {student}", number, f"S{number}", student, "A"])


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/corpus/class/build_class.py CLASS_DIR")
    folder = Path(sys.argv[1])
    if folder.exists() and any(folder.iterdir()):
        sys.exit(f"{folder} is not empty: give a new folder")
    expected = build_class(folder)
    (folder / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    roles = expected["roles"]
    counts = {role: sum(r == role for r in roles.values()) for role in sorted(set(roles.values()))}
    print(
        f"wrote a class of {len(roles)} in {folder}: "
        + ", ".join(f"{n} {r}" for r, n in counts.items())
    )


if __name__ == "__main__":
    main()
