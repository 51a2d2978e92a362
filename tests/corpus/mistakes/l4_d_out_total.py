# assignment: 04_multihead_attention
# expect: wrapper_d_out=total_width
def wrapper_d_out():
    heads, features = 2, 2
    return features * heads // 2
