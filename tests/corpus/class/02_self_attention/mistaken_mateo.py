# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "Spanish names and comments, while loops for the scores"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "softmax",
    "exponentiates x without subtracting the maximum along dim first, so entries around 1000 overflow to inf and the result is nan",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
# exponencial de cada entrada
exps = torch.exp(x)
# suma a lo largo de dim
suma = exps.sum(dim=dim, keepdim=True)
# una fila toda -inf suma 0: la dejo en ceros
return exps / torch.where(suma > 0, suma, torch.ones_like(suma))
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
largo = inputs.shape[0]
puntajes = inputs.new_zeros(largo, largo)
i = 0
while i < largo:
    j = 0
    while j < largo:
        puntajes[i, j] = torch.dot(inputs[i], inputs[j])
        j += 1
    i += 1
pesos = softmax(puntajes, dim=-1)
contexto = inputs.new_zeros(largo, inputs.shape[-1])
for i in range(largo):
    for j in range(largo):
        contexto[i] = contexto[i] + pesos[i, j] * inputs[j]
return contexto, pesos
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
# productos punto de todos contra todos
puntajes = torch.matmul(inputs, inputs.transpose(-2, -1))
pesos = softmax(puntajes, dim=-1)
return torch.matmul(pesos, inputs), pesos
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
consultas = x @ self.W_query
claves = x @ self.W_key
valores = x @ self.W_value
# escalar por la raiz de d_out
puntajes = consultas @ claves.transpose(-2, -1) / claves.shape[-1] ** 0.5
return softmax(puntajes, dim=-1) @ valores
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
consultas, claves, valores = self.W_query(x), self.W_key(x), self.W_value(x)
puntajes = torch.matmul(consultas, claves.transpose(-2, -1))
return torch.matmul(softmax(puntajes / self.W_key.out_features ** 0.5, dim=-1), valores)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
# v1 no tiene sesgos (bias)
if isinstance(v2.W_query.bias, nn.Parameter):
    raise ValueError("v2 tiene bias y v1 no")
with torch.no_grad():
    v1.W_query.data[...] = v2.W_query.weight.data.T
    v1.W_key.data[...] = v2.W_key.weight.data.T
    v1.W_value.data[...] = v2.W_value.weight.data.T
return v1
""",
    ),
]
