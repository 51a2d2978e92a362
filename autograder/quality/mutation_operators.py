"""The mutation operators: each rewrites one node of a reference into a plausible mistake.

:func:`mutants` parses the function (or ``forward`` method) that answers an exercise
(declared with :func:`attnkit_solutions.exercises.exercise`), drops its docstring and
annotations, and yields one :class:`Mutant` per rewritten node: swapped axes (``-1`` ->
``-2``, ``0`` -> ``1``), off-by-one constants and slice or range bounds, ``triu`` <->
``tril``, changed float constants (``** 0.5`` -> ``** 1.0``, ``-inf`` -> ``0.0``), a
dropped ``sqrt`` / transpose / ``.T`` / subtraction / bias, swapped matmul operands, a
width read from another tensor, an inverted ``masked_fill`` mask, flipped comparisons,
``keepdim=True`` -> ``False``, a different local returned, a deleted statement.
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from attnkit_solutions.exercises import reference_object

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
    statement: str = ""
    """The first line of the reference's statement that holds the change."""
    clause: str = ""
    """For a clause mutant (:mod:`.clause_mutants`): the contract clause it breaks."""
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]] | None = field(
        default=None, compare=False
    )
    """For a clause mutant: makes the broken definition from the reference's own."""


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
    """The reference's function and the file line it starts on. Its decorators, docstring
    and annotations are dropped: mutating them would change nothing the suites can see."""
    target = reference_object(slug, exercise)
    lines, start = inspect.getsourcelines(target)
    function = ast.parse(textwrap.dedent("".join(lines))).body[0]
    assert isinstance(function, ast.FunctionDef)
    function.decorator_list = []  # @exercise declares the reference; a mutant is no reference
    if ast.get_docstring(function) is not None:
        function.body = function.body[1:] or [ast.Pass()]
    function.returns = None
    for argument in ast.walk(function.args):
        if isinstance(argument, ast.arg):
            argument.annotation = None
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


def short(code: str) -> str:
    """The first line of ``code``, cut at 60 characters."""
    line = code.splitlines()[0]
    return line if len(line) <= 60 else line[:57] + "..."


def mutants(slug: str, exercise: str) -> list[Mutant]:
    """Every distinct mutant of one exercise's reference (each differs in one node)."""
    function, start = reference_tree(slug, exercise)
    names = local_names(function)
    seen = {ast.unparse(function)}
    found = []
    # An error message's text is no behaviour: nothing inside an f-string is mutated.
    signature = f"def {function.name}{ast.unparse(function.args).join('()')}"
    statements = {
        id(n): ast.unparse(s).splitlines()[0]
        for s in ast.walk(function)
        if isinstance(s, ast.stmt) and s is not function
        for n in ast.walk(s)
    }
    quoted = {
        id(n) for s in ast.walk(function) if isinstance(s, ast.JoinedStr) for n in ast.walk(s)
    }
    for index, node in enumerate(ast.walk(function)):
        if node is function or id(node) in quoted:
            continue
        for new in alternatives(node, names):
            tree = copy.deepcopy(function)
            replace(tree, list(ast.walk(tree))[index], new)
            source = ast.unparse(ast.fix_missing_locations(tree))
            if source in seen:
                continue
            seen.add(source)
            before, after = short(ast.unparse(node)), short(ast.unparse(new))
            line = start + getattr(node, "lineno", 1) - 1
            change = f"{before} -> {after}"
            found.append(
                Mutant(slug, exercise, change, line, source, statements.get(id(node), signature))
            )
    return found
