STORY = "train_step passes a closure to optimizer.step(closure), as the PyTorch docs show for LBFGS; cross-entropy on [batch, vocab, T] logits"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "train_step",
        """
def closure():
    optimizer.zero_grad()
    logits = model(inputs)  # [batch, T, vocab]
    loss = F.cross_entropy(logits.transpose(1, 2), targets)  # wants [batch, vocab, T]
    loss.backward()
    return loss

loss = optimizer.step(closure)
return loss.item()
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
