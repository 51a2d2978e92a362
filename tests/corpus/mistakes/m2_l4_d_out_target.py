# assignment: 04_multihead_attention
# expect: wrapper_d_out=total_width
def wrapper_d_out():
    wanted_features = 2
    return wanted_features
