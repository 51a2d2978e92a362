# assignment: 06_attention_at_inference
# expect: none
def generate(model, prompt, max_new_tokens):
    model.start_caches(prompt.shape[0])
    logits = model(prompt, use_cache=True)[:, -1]
    ids = prompt
    history = []
    for _ in range(max_new_tokens):
        nxt = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
        logits = model(nxt, use_cache=True)[:, -1]
        history.append(logits)
    return ids, torch.stack(history, dim=1)
