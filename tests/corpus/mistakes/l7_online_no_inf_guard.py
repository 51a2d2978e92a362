# assignment: 07_flash_attention
# expect: none
def online_softmax(scores, block):
    # textbook recurrence with no care for a row of -inf: -inf - -inf is NaN
    m = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype)
    lsum = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for blk in torch.split(scores, block, dim=-1):
        m_new = torch.maximum(m, blk.max(dim=-1).values)
        lsum = lsum * torch.exp(m - m_new) + torch.exp(blk - m_new[..., None]).sum(-1)
        m = m_new
    return torch.exp(scores - m[..., None]) / lsum[..., None]
