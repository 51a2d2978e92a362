# assignment: 07_flash_attention
# expect: online_softmax=tail_block_dropped
def online_softmax(scores, block):
    # the loop stops before a partial last block: those columns never reach m or the sum
    n = scores.shape[-1]
    m = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype)
    lsum = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for j in range(0, n - block + 1, block):
        b = scores[..., j : j + block]
        m_new = torch.maximum(m, b.amax(-1))
        shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
        lsum = lsum * torch.exp(m - shift) + torch.exp(b - shift[..., None]).sum(-1)
        m = m_new
    shift = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    num = torch.exp(scores - shift[..., None])
    den = torch.where(lsum > 0, lsum, torch.ones_like(lsum))
    return torch.where(lsum[..., None] > 0, num / den[..., None], torch.zeros_like(num))
