STORY = "Colab copy with a (1) in its name; times the data pipeline with %%time, installs nothing"
PATTERNS = ["colab-save", "renamed-file", "magics", "display"]
SAVE = {"file": "Copy of 02_self_attention (1).ipynb", "editor": "colab"}
EDITS = [
    (
        "fill",
        "softmax",
        """
z = x - x.max(dim=dim, keepdim=True).values.clamp_min(torch.finfo(x.dtype).min)
z = torch.nan_to_num(z, nan=float("-inf"))
p = z.exp()
return p / p.sum(dim=dim, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
T = inputs.shape[0]
attn_scores = torch.zeros(T, T, dtype=inputs.dtype)
for i, x_i in enumerate(inputs):
    for j, x_j in enumerate(inputs):
        attn_scores[i, j] = (x_i * x_j).sum()
attn_weights = softmax(attn_scores, dim=-1)
context = torch.zeros(T, inputs.shape[1], dtype=inputs.dtype)
for i in range(T):
    for j, x_j in enumerate(inputs):
        context[i] = context[i] + attn_weights[i, j] * x_j
return context, attn_weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
attn_weights = softmax(inputs @ inputs.mT, dim=-1)
return attn_weights @ inputs, attn_weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
keys = x @ self.W_key
queries = x @ self.W_query
values = x @ self.W_value
attn_weights = softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)
return attn_weights @ values
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
keys = self.W_key(x)
queries = self.W_query(x)
values = self.W_value(x)
attn_weights = softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)
return attn_weights @ values
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_query.bias is not None:
    raise ValueError("qkv_bias=True: v1 has nowhere to put the biases")
v1.W_query = torch.nn.Parameter(v2.W_query.weight.T.detach().clone())
v1.W_key = torch.nn.Parameter(v2.W_key.weight.T.detach().clone())
v1.W_value = torch.nn.Parameter(v2.W_value.weight.T.detach().clone())
return v1
""",
    ),
    (
        "edit",
        "from attnkit_data import create_dataloader_v1",
        ("from attnkit_data", "%%time\nfrom attnkit_data"),
    ),
    (
        "end",
        None,
        """
display(context.shape, context[0, :2, :5])
""",
    ),
]
