# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "vectorised with @, long descriptive names, a comment above every step"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
# largest entry of each slice along dim, kept with size 1 so it broadcasts back
largest = x.amax(dim=dim, keepdim=True)
# a slice of only -inf has no finite largest entry: shift it by nothing at all
largest = torch.where(largest.isfinite(), largest, torch.zeros_like(largest))
# after the shift every exponent is <= 0, so exp cannot overflow
exponentials = (x - largest).exp()
# the sum is 0 only for an all -inf slice, which has to stay all zeros
normaliser = exponentials.sum(dim=dim, keepdim=True)
return exponentials / torch.where(normaliser == 0, torch.ones_like(normaliser), normaliser)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
num_tokens = inputs.shape[0]
# attention score for every (query i, key j) pair
attn_scores = inputs.new_zeros((num_tokens, num_tokens))
for i in range(num_tokens):
    for j in range(num_tokens):
        attn_scores[i, j] = inputs[i] @ inputs[j]
# every row of scores becomes a probability distribution
attn_weights = softmax(attn_scores, dim=-1)
# context of token i: the weighted sum of all the embeddings
context_vecs = inputs.new_zeros(inputs.shape)
for i in range(num_tokens):
    for j in range(num_tokens):
        context_vecs[i] = context_vecs[i] + attn_weights[i, j] * inputs[j]
return context_vecs, attn_weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
# every dot product at once: [..., T, d] @ [..., d, T] -> [..., T, T]
attn_scores = inputs @ inputs.transpose(-2, -1)
attn_weights = softmax(attn_scores, dim=-1)
# every weighted sum at once: [..., T, T] @ [..., T, d] -> [..., T, d]
return attn_weights @ inputs, attn_weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
# project every token three ways
query_vecs = x @ self.W_query
key_vecs = x @ self.W_key
value_vecs = x @ self.W_value
# dot product of every query with every key, scaled by sqrt(d_out)
attn_scores = query_vecs @ key_vecs.transpose(-2, -1)
attn_weights = softmax(attn_scores / key_vecs.shape[-1] ** 0.5, dim=-1)
# mix the values with those weights
return attn_weights @ value_vecs
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
# each nn.Linear computes x @ weight.T (+ bias) for us
queries_proj = self.W_query(x)
keys_proj = self.W_key(x)
values_proj = self.W_value(x)
# same scaled dot-product attention as in v1
key_width = keys_proj.shape[-1]
attn_scores = queries_proj @ keys_proj.transpose(-2, -1) / key_width ** 0.5
return softmax(attn_scores, dim=-1) @ values_proj
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
# v1 has nowhere to store a bias, so refuse a v2 that has one
if v2.W_query.bias is not None:
    raise ValueError("cannot copy a SelfAttention_v2 built with qkv_bias=True into a SelfAttention_v1")
# nn.Linear stores [d_out, d_in] while v1 stores [d_in, d_out]: transpose
with torch.no_grad():
    v1.W_query.copy_(v2.W_query.weight.transpose(0, 1))
    v1.W_key.copy_(v2.W_key.weight.transpose(0, 1))
    v1.W_value.copy_(v2.W_value.weight.transpose(0, 1))
return v1
""",
    ),
]
