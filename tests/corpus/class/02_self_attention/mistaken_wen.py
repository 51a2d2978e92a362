# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "follows the book's code closely: enumerate loops, keys.T in the first trainable layer"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "SelfAttention_v1",
    "transposes the keys with keys.T, which on a batch [batch, T, d_out] reverses every axis instead of swapping the last two, so batched inputs fail",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
x_max = x.max(dim=dim, keepdim=True)[0]
x_max = torch.nan_to_num(x_max, neginf=0.0)
x_exp = torch.exp(x - x_max)
return x_exp / torch.clamp(x_exp.sum(dim=dim, keepdim=True), min=1e-12)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
attn_scores = torch.empty(inputs.shape[0], inputs.shape[0], dtype=inputs.dtype)
for i, query_tok in enumerate(inputs):
    for j, key_tok in enumerate(inputs):
        attn_scores[i, j] = torch.dot(query_tok, key_tok)
attn_weights = softmax(attn_scores, dim=1)
all_context_vecs = torch.zeros_like(inputs)
for i in range(len(inputs)):
    for j, value_tok in enumerate(inputs):
        all_context_vecs[i] += attn_weights[i, j] * value_tok
return all_context_vecs, attn_weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
all_attn_scores = torch.matmul(inputs, inputs.transpose(-2, -1))
all_attn_weights = softmax(all_attn_scores, dim=-1)
return all_attn_weights @ inputs, all_attn_weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
k_proj = x @ self.W_key
q_proj = x @ self.W_query
v_proj = x @ self.W_value
attn_scores = q_proj @ k_proj.T  # omega
attn_weights = softmax(attn_scores / k_proj.shape[-1] ** 0.5, dim=-1)
context_vec = attn_weights @ v_proj
return context_vec
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
k_mat, q_mat, v_mat = self.W_key(x), self.W_query(x), self.W_value(x)
attn_weights = softmax(q_mat @ k_mat.mT / k_mat.shape[-1] ** 0.5, dim=-1)
return attn_weights @ v_mat
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_query.bias is not None or v2.W_key.bias is not None:
    raise ValueError("v2 was created with qkv_bias=True")
v1.W_query.data.copy_(v2.W_query.weight.data.t())
v1.W_key.data.copy_(v2.W_key.weight.data.t())
v1.W_value.data.copy_(v2.W_value.weight.data.t())
return v1
""",
    ),
]
