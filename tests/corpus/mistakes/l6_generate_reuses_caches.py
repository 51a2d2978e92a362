# assignment: 06_attention_at_inference
# expect: generate=stale_caches
def generate(model, prompt, max_new_tokens):
    if model.caches is None:
        model.start_caches(len(prompt))
    out = model(prompt, use_cache=True)
    tokens = [prompt]
    scores = []
    for _ in range(max_new_tokens):
        last = out[:, -1, :]
        scores.append(last)
        token = torch.argmax(last, dim=-1).unsqueeze(1)
        tokens.append(token)
        if len(scores) < max_new_tokens:
            out = model(token, use_cache=True)
    return torch.cat(tokens, dim=1), torch.stack(scores, dim=1)
