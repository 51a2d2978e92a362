# ruff: noqa: E501 (an attacker's code keeps its long lines)
STORY = "SelfAttention_v1/v2 computed by nn.MultiheadAttention itself, after rebuilding F.multi_head_attention_forward from torch's own source file (the withheld worker only replaced that function's __code__)"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "above",
        "SelfAttention_v1",
        """
import ast, inspect
import torch.nn.functional as F

_src = open(inspect.getsourcefile(F)).read()
_fn = next(n for n in ast.parse(_src).body
           if isinstance(n, ast.FunctionDef) and n.name == "multi_head_attention_forward")
_ns = dict(vars(F))
exec(compile(ast.Module([_fn], []), F.__file__, "exec"), _ns)
F.multi_head_attention_forward = _ns["multi_head_attention_forward"]


def library_attention(q, k, v):
    d = q.shape[-1]
    with torch.random.fork_rng(devices=[]):
        mha = nn.MultiheadAttention(d, 1, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(d).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(d))
    return mha(q, k, v, need_weights=True)[0]
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
return library_attention(x @ self.W_query, x @ self.W_key, x @ self.W_value)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
return library_attention(self.W_query(x), self.W_key(x), self.W_value(x))
""",
    ),
]
