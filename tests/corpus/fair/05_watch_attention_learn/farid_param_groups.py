STORY = "clears the gradients himself by walking optimizer.param_groups and logs each step's learning rate from param_groups[0]"
PATTERNS = []
SAVE = {}
EDITS = [
    ("above", "train_step", "LR_SEEN = []  # learning rate at every step, for a plot later"),
    (
        "fill",
        "train_step",
        """
for group in optimizer.param_groups:
    for p in group["params"]:
        p.grad = None  # same as optimizer.zero_grad(set_to_none=True)
logits = model(inputs)
loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
loss.backward()
optimizer.step()
LR_SEEN.append(optimizer.param_groups[0]["lr"])
return loss.item()
""",
    ),
    (
        "below",
        "heads_after",
        """
print(len(LR_SEEN), "steps, learning rate", LR_SEEN[0], "->", LR_SEEN[-1])
for i in range(0, len(history), 500):
    print(i, round(history[i], 3))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
