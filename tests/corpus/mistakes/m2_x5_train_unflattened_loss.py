# assignment: 05_watch_attention_learn
# expect: none
def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    logits = model(inputs)
    loss = F.cross_entropy(logits, targets)  # [batch, T, vocab] against [batch, T]
    loss.backward()
    optimizer.step()
    return loss.item()
