"""The initialisation contract of docs/models.md, in plain Python.

The one reference the test helpers share (test/runner/Inputs/check-output.py,
test/tp-gen/Inputs/check-numerics.py), written from the document, not from
the C++ of tp-runner: element i (flat, global, row-major) of a tensor with a
`tp.init` descriptor.
"""

import math

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(x):
    z = (x + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def unit(x):
    """A double in (0, 1] from the top 53 bits of splitmix64(x)."""
    return ((splitmix64(x & MASK) >> 11) + 1) * 2.0**-53


def element(init, i):
    """Element i (flat, global, row-major) of a buffer with this init."""
    kind = init["kind"]
    if kind == "zeros":
        return 0
    if kind == "ones":
        return 1
    base = (init["seed"] * GOLDEN) & MASK
    if kind == "integers":
        return splitmix64((base + i) & MASK) % init["high"]
    u1 = unit(base + 2 * i)
    if kind == "uniform":
        return init["scale"] * (2.0 * u1 - 1.0)
    u2 = unit(base + 2 * i + 1)
    return (init["std"] * math.sqrt(-2.0 * math.log(u1)) *
            math.cos(2.0 * math.pi * u2))


def materialise(init, count):
    """The first `count` elements, as doubles."""
    return [float(element(init, i)) for i in range(count)]
