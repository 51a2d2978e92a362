# assignment: 06_attention_at_inference
# expect: generate=whole_sequence_each_step
def generate(model, prompt, max_new_tokens):
    model.start_caches(prompt.size(0))
    ids = prompt.clone()
    all_logits = []
    for _ in range(max_new_tokens):
        logits = model(ids, use_cache=True)[:, -1, :]
        all_logits.append(logits)
        ids = torch.cat((ids, logits.argmax(dim=-1, keepdim=True)), dim=1)
    return ids, torch.stack(all_logits, dim=1)
