# assignment: 05_watch_attention_learn
# expect: MultiHeadAttention=scale_by_d_out
class MultiHeadAttention:
    def forward(self, x, padding=None):
        B, T, _ = x.shape
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        d_k = K.shape[-1]  # width of the keys

        def split(M):
            return M.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

        Q, K, V = split(Q), split(K), split(V)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
        forbidden = self.mask[:T, :T]
        if padding is not None:
            forbidden = forbidden | padding
        scores = scores.masked_fill(forbidden, -torch.inf)
        W = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        self.last_weights = W.detach()
        context = (self.dropout(W) @ V).transpose(1, 2).reshape(B, T, self.d_out)
        return self.out_proj(context)
