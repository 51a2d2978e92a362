# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "camelCase names, Tensor.matmul, a branch in softmax only when a slice is all -inf"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "simple_attention_loop",
    "the weighted sum multiplies weights[i, j] by inputs[i] instead of inputs[j], so every context vector is the token's own embedding",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
maxVal = torch.max(x, dim=dim, keepdim=True).values
if torch.isneginf(maxVal).any():
    maxVal = torch.where(torch.isneginf(maxVal), torch.zeros_like(maxVal), maxVal)
expX = torch.exp(x - maxVal)
sumExp = torch.sum(expX, dim=dim, keepdim=True)
sumExp[sumExp == 0] = 1
return expX / sumExp
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
numTokens = inputs.shape[0]
attnScores = torch.zeros((numTokens, numTokens), dtype=inputs.dtype)
for i in range(numTokens):
    for j in range(numTokens):
        attnScores[i, j] = inputs[i] @ inputs[j]
attnWeights = softmax(attnScores, dim=-1)
contextVecs = torch.zeros_like(inputs)
for i in range(numTokens):
    for j in range(numTokens):
        contextVecs[i] += attnWeights[i, j] * inputs[i]
return contextVecs, attnWeights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
attnScores = inputs.matmul(inputs.transpose(-2, -1))
attnWeights = softmax(attnScores, dim=-1)
contextVecs = attnWeights.matmul(inputs)
return contextVecs, attnWeights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
queryVecs = x.matmul(self.W_query)
keyVecs = x.matmul(self.W_key)
valueVecs = x.matmul(self.W_value)
dOut = keyVecs.shape[-1]
attnWeights = softmax(queryVecs.matmul(keyVecs.transpose(-2, -1)) / dOut**0.5, dim=-1)
return attnWeights.matmul(valueVecs)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
queryVecs, keyVecs, valueVecs = self.W_query(x), self.W_key(x), self.W_value(x)
scaleFactor = 1 / keyVecs.size(-1) ** 0.5
return softmax(queryVecs.matmul(keyVecs.transpose(-2, -1)) * scaleFactor, dim=-1).matmul(valueVecs)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
biasFound = any(layer.bias is not None for layer in [v2.W_query, v2.W_key, v2.W_value])
if biasFound:
    raise ValueError("Cannot copy: v2 uses qkv_bias=True")
with torch.no_grad():
    v1.W_query.copy_(v2.W_query.weight.T.clone())
    v1.W_key.copy_(v2.W_key.weight.T.clone())
    v1.W_value.copy_(v2.W_value.weight.T.clone())
return v1
""",
    ),
]
