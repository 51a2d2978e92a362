# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=qkv_bias_ignored
class MultiHeadAttention:
    def forward(self, x, padding=None):
        b, t, _ = x.shape

        def project(layer):
            y = F.linear(x, layer.weight)
            return y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = project(self.W_query), project(self.W_key), project(self.W_value)
        a = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        stop = self.mask[:t, :t]
        if padding is not None:
            stop = stop | padding
        a = a.masked_fill(stop, -torch.inf)
        a = torch.softmax(a, dim=-1).nan_to_num(0.0)
        self.last_weights = a.detach()
        out = (self.dropout(a) @ v).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(out)
