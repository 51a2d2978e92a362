STORY = "sets torch.set_num_threads(2) after the setup; smoke-tests train_step in its own cell with a tqdm bar he updates by hand and never closes"
PATTERNS = ["block-globals"]
SAVE = {}
EDITS = [
    ("below", "setup", "torch.set_num_threads(2)"),
    (
        "replace",
        "train_step",
        '''
from tqdm import tqdm


def train_step(model, optimizer, inputs, targets):
    """one step of next-token prediction; returns the loss as a float"""
    optimizer.zero_grad(set_to_none=True)
    logits = model(inputs)
    vocab = logits.size(-1)
    loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss.detach())


# smoke test on a throwaway model: does the loss go down at all?
smoke_model = TinyTransformer(16, 32, 12, num_heads=2, num_layers=1)
smoke_opt = torch.optim.AdamW(smoke_model.parameters(), lr=3e-3)
smoke_data = torch.randint(0, 16, (8, 13), generator=torch.Generator().manual_seed(1))
pbar = tqdm(total=60, desc="smoke test")
for step in range(60):
    smoke_loss = train_step(smoke_model, smoke_opt, smoke_data[:, :-1], smoke_data[:, 1:])
    pbar.set_postfix(loss=f"{smoke_loss:.3f}")
    pbar.update()
''',
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
