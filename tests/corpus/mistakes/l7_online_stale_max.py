# assignment: 07_flash_attention
# expect: none
def online_softmax(scores, block):
    # each block's exp is written out with the max known at that moment; only l is rescaled
    pieces = []
    m = torch.full(scores.shape[:-1], float("-inf"), dtype=scores.dtype)
    lsum = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for start in range(0, scores.shape[-1], block):
        blk = scores[..., start : start + block]
        m_new = torch.maximum(m, blk.amax(-1))
        shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
        e = torch.exp(blk - shift[..., None])
        lsum = lsum * torch.exp(m - shift) + e.sum(-1)
        pieces.append(e)
        m = m_new
    den = torch.where(lsum > 0, lsum, torch.ones_like(lsum))
    return torch.cat(pieces, dim=-1) / den[..., None]
