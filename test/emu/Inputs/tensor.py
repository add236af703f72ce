"""Checks test/emu/tensor.cu: D = A B + C in the mma.sync fragment layout."""
import sys

vals = {}
for line in open(sys.argv[1]):
    if line.startswith("buffer "):
        k, _, rest = line.partition(":")
        vals[int(k.split()[1])] = [float(x) for x in rest.split()]
out = vals[0]
A = [[(r + 2 * c) % 7 - 3 for c in range(16)] for r in range(16)]
# B^T is stored [n][k]: element i is n = i // 16, k = i % 16.
B = [[(n * 3 + k) % 5 - 2 for n in range(8)] for k in range(16)]
for lane in range(32):
    g, t = lane >> 2, lane & 3
    c = [lane, -lane, 0.5, 2 * lane]
    for i in range(4):
        row = g + (8 if i >= 2 else 0)
        col = t * 2 + (i & 1)
        want = c[i] + sum(A[row][k] * B[k][col] for k in range(16))
        got = out[lane * 4 + i]
        if got != want:
            sys.exit("lane %d d%d (row %d, col %d): emulator %g, expected %g"
                     % (lane, i, row, col, got, want))
print("tensor: 128 values of D = A B + C")
