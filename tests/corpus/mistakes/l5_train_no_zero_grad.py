# assignment: 05_watch_attention_learn
# expect: train_step=gradients_not_cleared
def train_step(model, optimizer, inputs, targets):
    logits = model(inputs)
    vocab = logits.shape[-1]
    loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
