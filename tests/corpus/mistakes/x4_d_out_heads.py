# assignment: 04_multihead_attention
# expect: none
def wrapper_d_out():
    return 4
