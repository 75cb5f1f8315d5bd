
import torch
import triton
import triton.language as tl

BLOCK_V = 256


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, loss_ptr, n_vocab, stride_row,
                         BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row * stride_row
    # pass 1: the row maximum
    running_max = tl.full([BLOCK_V], float("-inf"), tl.float32)
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(row_ptr + cols, mask=cols < n_vocab, other=float("-inf")).to(tl.float32)
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    # pass 2: log-sum-exp
    running_sum = tl.zeros([BLOCK_V], dtype=tl.float32)
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(row_ptr + cols, mask=cols < n_vocab, other=float("-inf")).to(tl.float32)
        running_sum += tl.exp(x - row_max)
    log_sum_exp = row_max + tl.log(tl.sum(running_sum, axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_ptr + target).to(tl.float32)
    tl.store(loss_ptr + row, log_sum_exp - target_logit)


def cross_entropy(logits, targets, loss):
    n_rows, n_vocab = logits.shape
    grid = (n_rows,)
    cross_entropy_kernel[grid](
        logits, targets, loss, n_vocab, logits.stride(0), BLOCK_V=BLOCK_V, num_warps=4, num_stages=1
    )
