# assignment: 05_watch_attention_learn
# expect: train_step=gradients_not_cleared
def train_step(model, optimizer, inputs, targets):
    criterion = nn.CrossEntropyLoss()
    model.train()
    out = model(inputs)
    loss = criterion(out.reshape(-1, out.size(-1)), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss.detach())
