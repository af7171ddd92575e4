"""An independent oracle for the tests: the threefry2x32 generator of API.md in numpy uint32 arithmetic."""
import numpy as np

M32 = 0xFFFFFFFF


def oracle_bits(seed, counter, n):
    if n == 0:
        return np.zeros(0, np.uint32)
    seed, counter = seed & M32, counter & M32
    h = -(-n // 2)
    c1 = ((np.arange(h, dtype=np.uint64) + np.uint64(counter)) & np.uint64(M32)).astype(np.uint32)
    c2 = c1 + np.uint32(h)
    k = [0, (seed ^ 0x1BD11BDA) & M32, seed]
    x0, x1 = c1 + np.uint32(k[2]), c2 + np.uint32(k[0])
    for g in range(5):
        for r in ([13, 15, 26, 6] if g % 2 == 0 else [17, 29, 16, 24]):
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r)))
        x0 = x0 + np.uint32(k[g % 3])
        x1 = x1 + np.uint32((k[(g + 1) % 3] + g + 1) & M32)
    return np.concatenate([x0, x1])[:n]


def first_counter(counter, n):
    """The counter a Tensor draw of n words starts at: tinygrad 0.9.0 starts a draw of one or two words (one counter
    pair) at the counter after its advance by n (its arange(1) + counter folds into the counter buffer that the
    advance then overwrites)."""
    return (counter + n) & M32 if n <= 2 else counter
