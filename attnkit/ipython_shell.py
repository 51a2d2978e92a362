"""The IPython shell that runs a notebook's cells as a Jupyter kernel would (one per process).

Two of IPython's steps are done once rather than for every cell, with the same result:
the transformation of a cell's text (magics, shell escapes, prompts), a function of the
text alone, is kept per text; and a cell that cannot await at the top level is not compiled
a second time to find out.
"""

from __future__ import annotations

from typing import Any

_shell: Any = None


def kernel_shell() -> Any:
    """An IPython shell that transforms and runs cells as a Jupyter kernel does.

    Created once per process, and not registered as IPython's singleton, so it never
    clashes with another shell the process (a test, a host application) may have.
    History is kept in memory, so nothing is written to disk.
    """
    global _shell
    if _shell is not None:
        return _shell
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.xmode = "Plain"
    shell = InteractiveShell(config=config)
    # Shell escapes (!pip install ..., %%bash) reach outside the notebook: a grader or a
    # check never runs them. They do nothing, as if the command printed nothing.
    shell.system = lambda cmd: None
    shell.getoutput = lambda cmd, split=True, depth=0: []
    # `%matplotlib inline` asks for a GUI event loop, which only a kernel's shell has.
    shell.enable_gui = lambda gui=None: None
    shell.should_run_async = _plain_unless_awaiting(shell.should_run_async)
    # The static part only: a one-line cell's dynamic step reads the namespace (is `time`
    # a variable or the %time magic?), so it runs every time.
    manager = shell.input_transformer_manager
    manager.transform_cell = _remembered(manager.transform_cell)
    _shell = shell
    return shell


TRANSFORMS_KEPT = 256


def _remembered(transform_cell: Any) -> Any:
    """IPython's static transformation of a cell's text (magics, shell escapes, prompts,
    indentation), kept per text: a function of the text alone, worked out once. The
    sandbox's zygote transforms the lesson's released cells before any worker exists, so
    no worker tokenises them again."""
    kept: dict[str, str] = {}

    def transform(raw_cell: str) -> str:
        found = kept.get(raw_cell)
        if found is None:
            found = transform_cell(raw_cell)
            if len(kept) < TRANSFORMS_KEPT:
                kept[raw_cell] = found
        return found

    return transform


def _plain_unless_awaiting(should_run_async: Any) -> Any:
    """IPython compiles every cell once more to learn whether it awaits at the top level;
    a cell without the words ``await`` and ``async`` cannot, so that compile is skipped
    (the answer is the one IPython would reach)."""

    def decide(raw_cell: str, **kwargs: Any) -> bool:
        transformed = kwargs.get("transformed_cell")
        if (
            isinstance(transformed, str)
            and "await" not in transformed
            and "async" not in transformed
        ):
            return False
        return bool(should_run_async(raw_cell, **kwargs))

    return decide


def fresh_namespace(shell: Any) -> dict[str, Any]:
    """Give ``shell`` a new, kernel-like user namespace and return it: ``__name__ ==
    "__main__"``, ``display`` and ``get_ipython``, as a kernel provides them."""
    import types

    from IPython.display import display

    module = types.ModuleType("__main__")
    shell.init_create_namespaces(user_module=module)
    shell.init_user_ns()
    namespace = shell.user_ns
    namespace["display"] = display
    return namespace
