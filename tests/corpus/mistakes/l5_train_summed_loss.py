# assignment: 05_watch_attention_learn
# expect: train_step=summed_loss
def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    logits = model(inputs)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
    loss.backward()
    optimizer.step()
    return float(loss)
