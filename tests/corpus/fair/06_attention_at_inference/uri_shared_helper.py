# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "one helper gives each query's absolute position for both masks; torch.matmul and a decorated no_grad generate"
PATTERNS = ["shared-helper", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "below",
        "setup",
        '''
def query_and_key_positions(num_queries, num_keys):
    """[num_queries, 1] absolute positions of the last num_queries tokens, [1, num_keys] of the keys."""
    queries = torch.arange(num_keys - num_queries, num_keys).reshape(num_queries, 1)
    keys = torch.arange(num_keys).reshape(1, num_keys)
    return queries, keys
''',
    ),
    (
        "fill",
        "chunk_causal_mask",
        """
queries, keys = query_and_key_positions(num_queries, num_keys)
return keys > queries
""",
    ),
    (
        "fill",
        "sliding_window_mask",
        """
queries, keys = query_and_key_positions(num_queries, num_keys)
too_old = keys <= queries - window
return (keys > queries) | too_old
""",
    ),
    (
        "fill",
        "GroupedQueryAttention",
        """
n, t, _ = x.shape
heads = lambda y, h: y.reshape(n, t, h, self.head_dim).transpose(1, 2)
q = heads(self.W_query(x), self.num_heads)
k = heads(self.W_key(x), self.num_kv_heads)
v = heads(self.W_value(x), self.num_kv_heads)
first = 0 if cache is None else cache.position
here = torch.arange(first, first + t)
q, k = rope(q, here), rope(k, here)
if cache is not None:
    k, v = cache(k, v)
group = self.num_heads // self.num_kv_heads
index = torch.arange(self.num_heads) // group  # query head -> its key/value head
k, v = k[:, index], v[:, index]
s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
if self.window is None:
    s = s.masked_fill(chunk_causal_mask(t, k.shape[2]), -math.inf)
else:
    s = s.masked_fill(sliding_window_mask(t, k.shape[2], self.window), -math.inf)
y = torch.matmul(torch.softmax(s, dim=-1), v)
return self.out_proj(y.transpose(1, 2).flatten(2))
""",
    ),
    (
        "fill",
        "TinyDecoder",
        """
h = self.token_embedding(ids)
for index, block in enumerate(self.blocks):
    h = h + block(h, self.caches[index] if use_cache else None)
return self.head(h)
""",
    ),
    (
        "fill",
        "generate",
        """
@torch.no_grad()
def step(tokens):
    return model(tokens, use_cache=True)[:, -1]

model.start_caches(prompt.shape[0])
batch, start = prompt.shape
ids = torch.empty(batch, start + max_new_tokens, dtype=prompt.dtype)
ids[:, :start] = prompt
logits = torch.empty(batch, max_new_tokens, model.head.out_features)
last = step(prompt)
for i in range(max_new_tokens):
    logits[:, i] = last
    ids[:, start + i] = last.argmax(dim=-1)
    if i + 1 < max_new_tokens:
        last = step(ids[:, start + i : start + i + 1])
return ids, logits
""",
    ),
]
