STORY = "Colab copy; counts GPT-2's parameters by building the layer, timing it with %time"
PATTERNS = ["colab-save", "renamed-file", "magics", "display"]
SAVE = {"file": "Copy of 04_multihead_attention (2).ipynb", "editor": "colab"}
EDITS = [
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
return torch.cat([h(x) for h in self.heads], dim=-1)
""",
    ),
    (
        "fill",
        "wrapper_d_out",
        """
return int(2 / 2)
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
b, num_tokens, d_in = x.shape
keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
attn_scores = queries @ keys.transpose(2, 3)
mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
attn_scores.masked_fill_(mask_bool, -torch.inf)
attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
attn_weights = self.dropout(attn_weights)
context_vec = (attn_weights @ values).transpose(1, 2)
context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
return self.out_proj(context_vec)
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
gpt2_mha = MultiHeadAttention(768, 768, 1024, 0.0, 12)
return sum(p.numel() for p in gpt2_mha.parameters() if p.requires_grad)
""",
    ),
    (
        "end",
        None,
        """
%time n = gpt2_attention_parameters()
display(f"{n:,} parameters")
""",
    ),
]
