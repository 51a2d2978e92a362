"""Lesson 5's helpers: train a model with the student's own training step, and draw what
its attention heads look at.

Both are for the student's eyes. ``lesson.train`` shows a progress bar and a live loss
curve; ``lesson.show_heads`` draws one heatmap per layer and head. The grader does not run
a cell that only calls them (see :func:`attnkit.notebook_code.is_check_cell`): no exercise
is graded on what they show, and training would spend a minute of every submission's time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def train(
    model: Any,
    batches: Callable[[], Any],
    step: Callable[[Any, Any, Any, Any], float],
    steps: int = 600,
    learning_rate: float = 3e-3,
    every: int = 100,
) -> list[float]:
    """Train ``model`` for ``steps`` steps of ``step(model, optimizer, inputs, targets)``
    (the student's ``train_step``) on ``batches()`` (token ids [batch, T + 1]: the inputs
    are the first T, the targets the last T). AdamW at ``learning_rate``. Returns the loss
    of every step; shows a progress bar, and the loss curve every ``every`` steps."""
    import torch
    from tqdm.auto import tqdm

    # tqdm's monitor is a thread that outlives the loop: none, so the cell leaves none.
    tqdm.monitor_interval = 0
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    losses: list[float] = []
    curve = LossCurve()
    # The tensors are tiny: one thread is faster than several that wait for each other
    # (twice as fast on two busy cores).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with tqdm(range(steps), desc="training", unit="step") as bar:
            for number in bar:
                ids = batches()
                losses.append(float(step(model, optimizer, ids[:, :-1], ids[:, 1:])))
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
                if (number + 1) % every == 0 or number + 1 == steps:
                    curve.draw(losses)
    finally:
        torch.set_num_threads(threads)
        model.eval()
    return losses


class LossCurve:
    """A loss curve redrawn in place in a notebook's output (printed elsewhere)."""

    def __init__(self) -> None:
        self.handle: Any = None

    def draw(self, losses: list[float]) -> None:
        import matplotlib.pyplot as plt

        try:
            from IPython.display import display
        except ImportError:  # pragma: no cover - IPython is a dependency
            display = None
        fig, ax = plt.subplots(figsize=(6, 2.6))
        ax.plot(range(1, len(losses) + 1), losses, linewidth=1)
        ax.set_xlabel("step")
        ax.set_ylabel("loss (cross-entropy)")
        ax.set_title(f"training loss: {losses[-1]:.3f} after {len(losses)} steps")
        fig.tight_layout()
        if display is None:
            print(f"step {len(losses)}: loss {losses[-1]:.3f}")
        elif self.handle is None:
            self.handle = display(fig, display_id=True)
        else:
            self.handle.update(fig)
        plt.close(fig)


def head_weights(model: Any, ids: Any) -> list[Any]:
    """Each block's attention weights [heads, T, T] for the first sequence of ``ids``
    (the blocks keep the weights of their last call in ``last_weights``)."""
    import torch

    model.eval()
    with torch.no_grad():
        model(ids)
    return [block.last_weights[0] for block in model.blocks]


def show_heads(model: Any, ids: Any, title: str = "", labels: list[str] | None = None) -> list[Any]:
    """Draw every head's attention pattern on the first sequence of ``ids``: one heatmap per
    layer (rows) and head (columns), each with its colour bar. A weight of exactly 0 (a
    masked cell) is left blank. Returns the weights, layer by layer."""
    import matplotlib.pyplot as plt
    import numpy as np

    weights = head_weights(model, ids)
    layers, heads = len(weights), weights[0].shape[0]
    fig, axes = plt.subplots(layers, heads, figsize=(3.6 * heads, 3.2 * layers), squeeze=False)
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("white")
    for layer, pattern in enumerate(weights):
        for head in range(heads):
            ax = axes[layer][head]
            shown = pattern[head].numpy()
            image = ax.imshow(np.ma.masked_where(shown == 0, shown), cmap=cmap, vmin=0, vmax=1)
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=10)
            ax.set_xlabel("key (attended to)", fontsize=8)
            ax.set_ylabel("query (attending)", fontsize=8)
            if labels is not None:
                ax.set_xticks(range(len(labels)), labels, fontsize=6, rotation=90)
                ax.set_yticks(range(len(labels)), labels, fontsize=6)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    plt.show()
    return weights
