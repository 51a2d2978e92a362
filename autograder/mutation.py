"""Mutation testing of the hidden suites: does every plausible wrong variant fail?

For every exercise, the reference's function (or ``forward`` method) is parsed, and each
mutation operator below rewrites one node of it: a swapped axis, an off-by-one bound,
``triu`` for ``tril``, a dropped subtraction, an inverted mask, a different local
returned, a deleted statement... Each mutant is compiled in the reference module's
globals, put in place of the reference in the lesson's namespace, and graded by the
lesson's hidden suite (:func:`attnkit_autograder.harness.run_suite`, only the tests of
the mutated exercise). A mutant is *killed* when any test does not pass.

A survivor that agrees with the reference on fresh random inputs
(:mod:`.mutation_inputs`) is listed as *likely equivalent*; those a human has judged
equivalent are in :data:`KNOWN_EQUIVALENT`, with the reason.

    python -m attnkit_autograder.mutation [slug ...]
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.implementation import LocalImplementation
from attnkit.outcome import PASSED
from attnkit_solutions.exercises import REFERENCE_CODE, reference_namespace, reference_object

from .harness import reference_implementation, run_suite
from .mutation_inputs import agrees
from .rubric import graded_cells

KNOWN_EQUIVALENT: dict[tuple[str, str, str], str] = {}
"""(slug, exercise, mutation) -> why the mutant computes what the reference computes."""

RENAMED = {"triu": "tril", "tril": "triu", "max": "min", "amax": "amin", "sum": "mean"}
"""Functions and methods swapped for a plausible wrong sibling."""
IDENTITY = {"sqrt", "transpose", "swapaxes", "detach", "contiguous", "exp", "dropout"}
"""Calls replaced by their argument (``np.sqrt(x)`` -> ``x``) or receiver (``x.T`` -> ``x``)."""
OPERATORS: dict[type, list[type]] = {
    ast.Add: [ast.Sub],
    ast.Sub: [ast.Add],
    ast.Mult: [ast.Div, ast.Add],
    ast.Div: [ast.Mult, ast.FloorDiv],
    ast.FloorDiv: [ast.Div, ast.Mult],
    ast.Pow: [ast.Mult],
    ast.Lt: [ast.LtE, ast.Gt],
    ast.LtE: [ast.Lt, ast.GtE],
    ast.Gt: [ast.GtE, ast.Lt],
    ast.GtE: [ast.Gt, ast.LtE],
    ast.Eq: [ast.NotEq],
    ast.NotEq: [ast.Eq],
    ast.Is: [ast.IsNot],
    ast.IsNot: [ast.Is],
    ast.In: [ast.NotIn],
    ast.NotIn: [ast.In],
}
"""Binary and comparison operators, each with the wrong ones it is replaced by."""
AXIS_KEYWORDS = {"dim", "axis"}


@dataclass(frozen=True)
class Mutant:
    slug: str
    exercise: str
    description: str
    """``old -> new``, in source form: what the mutation changed."""
    line: int
    """The line of the reference's source file where the change is."""
    source: str
    """The whole mutated function."""


@dataclass
class LessonScore:
    slug: str
    generated: int = 0
    killed: list[Mutant] = field(default_factory=list)
    survived: list[Mutant] = field(default_factory=list)
    equivalent: list[tuple[Mutant, str]] = field(default_factory=list)
    """Survivors that agree with the reference everywhere we looked, and why we think so."""

    @property
    def score(self) -> float:
        judged = len(self.killed) + len(self.survived)
        return len(self.killed) / judged if judged else 1.0


# -- the operators -----------------------------------------------------------------------------


def const(value: Any) -> ast.Constant:
    return ast.Constant(value)


def alternatives(node: ast.AST, names: tuple[list[str], list[str]]) -> Iterator[ast.AST]:
    """Every wrong replacement of ``node`` (fresh nodes; ``node`` is left alone). ``names``:
    the function's locals, and those of them that are arrays (see :func:`local_names`)."""
    c = copy.deepcopy
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield const(not node.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield from (const(node.value + 1), const(node.value - 1))
    elif isinstance(node, ast.Constant) and isinstance(node.value, float):
        yield from (const(v) for v in (1.0, 0.0) if v != node.value)
    elif isinstance(node, ast.UnaryOp):
        yield c(node.operand)
        if isinstance(node.operand, ast.Attribute) and node.operand.attr == "inf":
            yield const(0.0)
    elif isinstance(node, ast.BinOp):
        yield from (c(node.left), c(node.right))
        if not isinstance(node.op, ast.Add | ast.Mult):
            yield ast.BinOp(c(node.right), node.op, c(node.left))
        yield from (
            ast.BinOp(c(node.left), op(), c(node.right)) for op in OPERATORS.get(type(node.op), [])
        )
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        for op in OPERATORS.get(type(node.ops[0]), []):
            yield ast.Compare(c(node.left), [op()], c(node.comparators))
    elif isinstance(node, ast.Call):
        yield from call_alternatives(node)
    elif isinstance(node, ast.Attribute):
        yield from attribute_alternatives(node, names[1])
    elif isinstance(node, ast.Slice):
        for bound in ("lower", "upper"):
            if isinstance(getattr(node, bound), ast.Name):
                yield from bounds_moved(node, bound)
    else:
        yield from statement_alternatives(node, names[0])


def call_alternatives(node: ast.Call) -> Iterator[ast.AST]:
    """A renamed call, a call replaced by its argument, an inverted mask, a moved axis."""
    c = copy.deepcopy
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in RENAMED:
        renamed = c(node)
        if isinstance(renamed.func, ast.Attribute):
            renamed.func.attr = RENAMED[name]
        else:
            renamed.func.id = RENAMED[name]
        yield renamed
    on_self = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "self"
    if (name in IDENTITY or on_self) and len(node.args) == 1 and not node.keywords:
        yield c(node.args[0])
    elif name in IDENTITY and isinstance(func, ast.Attribute) and not on_self:
        yield c(func.value)
    if name in ("masked_fill", "where") and node.args:
        yield ast.Call(
            c(func),
            [ast.UnaryOp(ast.Invert(), c(node.args[0])), *c(node.args[1:])],
            c(node.keywords),
        )
    if name == "transpose" and len(node.args) == 2:
        pairs = {(1, 2): (-2, -1), (-2, -1): (1, 2)}
        now = tuple(ast.literal_eval(a) for a in node.args)
        if now in pairs:
            yield ast.Call(c(func), [const(v) for v in pairs[now]], [])
    if name == "range" and isinstance(node.args[-1], ast.Name):
        for moved in bounds_moved(ast.Slice(upper=node.args[-1]), "upper"):
            yield ast.Call(c(func), [*c(node.args[:-1]), moved.upper], [])
    for i, keyword in enumerate(node.keywords):
        if keyword.arg in AXIS_KEYWORDS and isinstance(keyword.value, ast.Name):
            for axis in (-1, 0):
                fixed = c(node)
                fixed.keywords[i].value = ast.UnaryOp(ast.USub(), const(1)) if axis else const(0)
                yield fixed


def attribute_alternatives(node: ast.Attribute, names: list[str]) -> Iterator[ast.AST]:
    """``x.T`` -> ``x``; ``x.shape`` -> ``y.shape`` for every other local ``y``."""
    if node.attr == "T":
        yield copy.deepcopy(node.value)
    if node.attr == "shape" and isinstance(node.value, ast.Name):
        for other in names:
            if other != node.value.id:
                yield ast.Attribute(ast.Name(other, ast.Load()), "shape", ast.Load())


def bounds_moved(node: ast.Slice, bound: str) -> Iterator[ast.Slice]:
    for op in (ast.Add, ast.Sub):
        moved = copy.deepcopy(node)
        setattr(moved, bound, ast.BinOp(getattr(node, bound), op(), const(1)))
        yield moved


def statement_alternatives(node: ast.AST, names: list[str]) -> Iterator[ast.AST]:
    """A deleted statement, a negated condition, another local returned, a loop item dropped."""
    c = copy.deepcopy
    constants = all(isinstance(e, ast.Constant) for e in getattr(node, "elts", []))
    if isinstance(node, ast.stmt) and not isinstance(node, ast.Return | ast.FunctionDef):
        yield ast.Pass()
    if isinstance(node, ast.If):
        yield ast.If(ast.UnaryOp(ast.Not(), c(node.test)), c(node.body), c(node.orelse))
    if isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) and not constants:
        for i in range(len(node.elts) - 1):
            swapped = c(node)
            swapped.elts[i : i + 2] = swapped.elts[i + 1], swapped.elts[i]
            yield swapped
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
        for other in names:
            if other != node.value.id:
                yield ast.Return(ast.Name(other, ast.Load()))
    if isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple) and len(node.iter.elts) > 1:
        for i in range(len(node.iter.elts)):
            fewer = c(node)
            del fewer.iter.elts[i]
            yield fewer


# -- generating mutants ----------------------------------------------------------------------


def reference_tree(slug: str, exercise: str) -> tuple[ast.FunctionDef, int]:
    """The reference's function (docstring dropped) and the file line it starts on."""
    target = reference_object(slug, exercise)
    lines, start = inspect.getsourcelines(target)
    function = ast.parse(textwrap.dedent("".join(lines))).body[0]
    assert isinstance(function, ast.FunctionDef)
    if ast.get_docstring(function) is not None:
        function.body = function.body[1:] or [ast.Pass()]
    return function, start


def local_names(function: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """The function's parameters and assigned locals (``self`` aside), and those of them
    that are arrays: used with ``@`` or as the receiver of an attribute."""
    found = [a.arg for a in function.args.args]
    found += [
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    ]
    names = [n for n in dict.fromkeys(found) if n not in ("self", "_")]
    used = [n.value for n in ast.walk(function) if isinstance(n, ast.Attribute)]
    used += [
        side
        for n in ast.walk(function)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)
        for side in (n.left, n.right)
    ]
    arrays = {n.id for n in used if isinstance(n, ast.Name)}
    return names, [n for n in names if n in arrays]


def replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put ``new`` where ``old`` is in ``tree``."""
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[next(i for i, v in enumerate(value) if v is old)] = new
                return
    raise ValueError("node not in tree")


def mutants(slug: str, exercise: str) -> list[Mutant]:
    """Every distinct mutant of one exercise's reference (each differs in one node)."""
    function, start = reference_tree(slug, exercise)
    names = local_names(function)
    seen = {ast.unparse(function)}
    found = []
    for index, node in enumerate(ast.walk(function)):
        if node is function:
            continue
        for new in alternatives(node, names):
            tree = copy.deepcopy(function)
            replace(tree, list(ast.walk(tree))[index], new)
            source = ast.unparse(ast.fix_missing_locations(tree))
            if source in seen:
                continue
            seen.add(source)
            before, after = ast.unparse(node).splitlines()[0], ast.unparse(new).splitlines()[0]
            line = start + getattr(node, "lineno", 1) - 1
            found.append(Mutant(slug, exercise, f"{before} -> {after}", line, source))
    return found


def mutant_namespace(mutant: Mutant) -> dict[str, Any] | None:
    """The lesson's reference namespace with the mutated definition in place (None when
    the mutant does not compile)."""
    namespace = reference_namespace(mutant.slug)
    target = namespace[mutant.exercise]
    original = reference_object(mutant.slug, mutant.exercise)
    globals_ = {**original.__globals__, **namespace}
    # Annotations stay strings, as in the reference module.
    source = "from __future__ import annotations\n" + mutant.source
    try:
        exec(compile(source, f"<mutant {mutant.exercise}>", "exec"), globals_)
    except Exception:
        return None
    function = globals_[original.__name__]
    if inspect.isclass(target):
        namespace[mutant.exercise] = type(mutant.exercise, (target,), {"forward": function})
    else:
        namespace[mutant.exercise] = function
    return namespace


# -- running them --------------------------------------------------------------------------------


def grade_ids(slug: str, exercise: str) -> set[str]:
    return {cell.grade_id for cell in graded_cells(slug) if cell.exercise == exercise}


def killed(namespace: dict[str, Any], slug: str, exercise: str, suite_ids: set[str] | None) -> bool:
    """Whether the hidden suite (the tests of ``exercise``, or only ``suite_ids``) fails it."""
    wanted = (
        grade_ids(slug, exercise) if suite_ids is None else suite_ids & grade_ids(slug, exercise)
    )
    if not wanted:
        return False
    impl = LocalImplementation(namespace, label="mutant")
    verdicts = run_suite(impl, slug, reference_implementation(slug), grade_ids=wanted)
    return any(v.status != PASSED for v in verdicts)


def exercises(slug: str) -> list[str]:
    return [e.name for e in ASSIGNMENTS[slug].exercises if (slug, e.name) in REFERENCE_CODE]


def score_lesson(slug: str, suite_ids: set[str] | None = None) -> LessonScore:
    """Generate every mutant of the lesson and grade each with its hidden suite."""
    result = LessonScore(slug)
    for exercise in exercises(slug):
        for mutant in mutants(slug, exercise):
            namespace = mutant_namespace(mutant)
            if namespace is None:
                continue
            result.generated += 1
            if killed(namespace, slug, exercise, suite_ids):
                result.killed.append(mutant)
                continue
            key = (slug, exercise, mutant.description)
            if key in KNOWN_EQUIVALENT:
                result.equivalent.append((mutant, KNOWN_EQUIVALENT[key]))
            elif agrees(slug, exercise, reference_namespace(slug), namespace):
                result.equivalent.append((mutant, "agrees with the reference on random inputs"))
            else:
                result.survived.append(mutant)
    return result


def report(result: LessonScore) -> str:
    lines = [
        f"{result.slug}: {result.generated} mutants, {len(result.killed)} killed, "
        f"{len(result.survived)} survived, {len(result.equivalent)} likely equivalent, "
        f"score {result.score:.1%}"
    ]
    for mutant in result.survived:
        lines.append(f"  SURVIVED  {mutant.exercise} line {mutant.line}: {mutant.description}")
    for mutant, why in result.equivalent:
        lines.append(
            f"  EQUIVALENT {mutant.exercise} line {mutant.line}: {mutant.description} ({why})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print each lesson's mutation score; exit 1 when a non-equivalent mutant survives."""
    slugs = (sys.argv[1:] if argv is None else argv) or list(ASSIGNMENTS)
    survivors = 0
    for slug in slugs:
        result = score_lesson(slug)
        survivors += len(result.survived)
        print(report(result), flush=True)
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
