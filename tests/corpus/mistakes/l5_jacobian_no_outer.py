# assignment: 05_watch_attention_learn
# expect: softmax_jacobian_norm=no_outer_product
def softmax_jacobian_norm(scores):
    s = torch.softmax(scores, dim=-1)
    J = torch.diag_embed(s)
    return torch.linalg.matrix_norm(J)
