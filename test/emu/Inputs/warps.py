"""Checks test/emu/warps.cu's output against CUDA's semantics, modelled here
in Python: exits 1 naming the first differing value."""
import sys

lines = open(sys.argv[1]).read().split("\n")
buf = {}
for line in lines:
    if line.startswith("buffer "):
        k, _, vals = line.partition(":")
        buf[int(k.split()[1])] = [int(x) for x in vals.split()]
inp, out, total = buf[0], buf[1], buf[2]

def s32(x):
    x &= 0xffffffff
    return x - (1 << 32) if x >> 31 else x

def shfl(vals, lane, mode, b, c):
    # PTX ISA, shfl.sync.
    bval, cval, seg = b & 31, c & 31, (c >> 8) & 31
    max_lane = (lane & seg) | (cval & ~seg)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bval; ok = j >= max_lane
    elif mode == "down":
        j = lane + bval; ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval; ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg); ok = j <= max_lane
    return vals[j if ok else lane]

expect = []
for blk in range(2):
    v = [inp[blk * 64 + t] * 3 + 1 for t in range(64)]
    acc = []
    for t in range(64):
        a = 0
        for i in range(t % 5):
            a += v[t] + i
        acc.append(a)
    block_sum = sum(v)
    for t in range(64):
        w0 = (t // 32) * 32
        wv = v[w0:w0 + 32]
        wa = acc[w0:w0 + 32]
        lane = t - w0
        o = [shfl(wv, lane, "up", 3, 16 << 8),
             shfl(wv, lane, "down", 5, (16 << 8) | 31),
             shfl(wv, lane, "bfly", 9, (16 << 8) | 31),
             shfl(wv, lane, "idx", (t * 7) & 31, (16 << 8) | 31)]
        ballot = 0
        for l in range(32):
            if wv[l] % 3 == 1 and ((w0 + l) & 5):
                ballot |= 1 << l
        o.append(s32(ballot))
        o.append(int(all(x > 0 for x in wv)) +
                 2 * int(any(w0 + l == 33 for l in range(32))))
        o.append(shfl(wa, lane, "bfly", 1, 31))
        o.append(block_sum)
        o.append(sum(range(64)))
        o.append(v[t] * ((t + 3) & 7) - v[t] * (t & 7))
        expect.extend(o)
want_total = [sum(inp[b * 64 + t] * 3 + 1 for t in range(64)) for b in range(2)]
for i, (got, want) in enumerate(zip(out, expect)):
    if got != want:
        sys.exit("thread %d value %d: emulator %d, CUDA %d" % (i // 10, i % 10, got, want))
if total != want_total:
    sys.exit("totals: emulator %s, CUDA %s" % (total, want_total))
print("warps: %d values as CUDA defines them" % len(expect))
