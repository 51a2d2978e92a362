# assignment: 07_flash_attention
# expect: online_softmax=sum_not_rescaled
def online_softmax(scores, block):
    # the running max is kept, but the old sum is never multiplied by exp(m_old - m_new)
    n = scores.shape[-1]
    m = torch.full(scores.shape[:-1], float("-inf"), dtype=scores.dtype)
    total = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for start in range(0, n, block):
        chunk = scores[..., start : start + block]
        m = torch.maximum(m, chunk.max(dim=-1).values)
        base = torch.where(m == float("-inf"), torch.zeros_like(m), m)
        total += torch.exp(chunk - base[..., None]).sum(dim=-1)
    base = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    e = torch.exp(scores - base[..., None])
    return torch.where(total[..., None] > 0, e / total[..., None], torch.zeros_like(e))
