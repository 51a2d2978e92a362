STORY = "exported as .py: train_step calls a loss_fn object from the cell above; at the end she swaps loss_fn for label smoothing to try it"
PATTERNS = ["py-export", "renamed-file", "question-comment"]
SAVE = {"file": "petra_05_watch_attention_learn.py", "editor": "py"}
EDITS = [
    ("above", "train_step", "loss_fn = nn.CrossEntropyLoss()"),
    (
        "fill",
        "train_step",
        """
optimizer.zero_grad()
out = model(inputs)
loss = loss_fn(out.flatten(end_dim=-2), targets.flatten())
loss.backward()
optimizer.step()
return loss.item()
""",
    ),
    (
        "end",
        None,
        """
# does label smoothing change how fast the induction head shows up?
loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
torch.manual_seed(0)
smooth_model = TinyTransformer(VOCAB_SIZE, 64, CONTEXT, num_heads=2, num_layers=2)
smooth_opt = torch.optim.AdamW(smooth_model.parameters(), lr=1e-3)
for _ in range(20):
    b = repeated_segments(32, generator, VOCAB_SIZE, CONTEXT + 1)
    print(round(train_step(smooth_model, smooth_opt, b[:, :-1], b[:, 1:]), 3), end=" ")
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
