STORY = "closure for optimizer.step, and after the step she logs the gradient norm of each param group; the loss as a sum divided by the count"
PATTERNS = ["explicit-loops"]
SAVE = {}
EDITS = [
    (
        "replace",
        "train_step",
        """
grad_log = []


def train_step(model, optimizer, inputs, targets):
    def loss_and_grads():
        optimizer.zero_grad()
        logits = model(inputs)
        n = targets.numel()
        total = torch.nn.functional.cross_entropy(
            logits.reshape(n, -1), targets.reshape(n), reduction="sum"
        )
        loss = total / n
        loss.backward()
        return loss

    loss = optimizer.step(loss_and_grads)
    norms = []
    for g in range(len(optimizer.param_groups)):
        grads = [p.grad.norm() for p in optimizer.param_groups[g]["params"] if p.grad is not None]
        norms.append(float(torch.stack(grads).norm()) if grads else 0.0)
    grad_log.append(norms)
    return loss.item()
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
