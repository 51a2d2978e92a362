# assignment: 06_attention_at_inference
# expect: generate=cleared_not_rebuilt
def generate(model, prompt, max_new_tokens):
    if model.caches is None:
        model.start_caches(prompt.shape[0])
    else:
        for cache in model.caches:
            cache.reset()
    logits = model(prompt, use_cache=True)[:, -1]
    ids = prompt
    chosen = []
    for step in range(max_new_tokens):
        nxt = logits.argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], 1)
        chosen.append(logits)
        if step + 1 < max_new_tokens:
            logits = model(nxt, use_cache=True)[:, -1]
    return ids, torch.stack(chosen, 1)
