#!/usr/bin/env python3
"""Counts, for test/Conversion/lower-gpu.test, what --tp-lower-gpu must
preserve: matmul-family ops in the input against GEMM calls in the output,
collectives against runtime collective calls, kernel launches
(stop-after=kernels), the distinct kernels the lowered program launches
against PTX entry points, and how many PTX entry points have the same code
as another one (tp-dedup-kernels: none).

Usage: lower-gpu-count.py INPUT.mlir KERNELS.mlir LOWERED.mlir
Prints nine lines, 'name: count', that the test compares with FileCheck
variables. The contraction test is independent of the compiler's: a
linalg.generic with a reduction iterator, two inputs, and a body made of
exactly one multiplication and one addition. Each fused attention
(a call of @tp_fused_attention_*, tp-fuse-attention) counts as the two GEMM
calls of its products; the last line says how many there are.
"""
import re
import sys

NAMED = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec",
         "linalg.vecmat", "linalg.batch_reduce_matmul")


def count_matmul_family(text):
    count = sum(len(re.findall(r"\b%s\b(?!_)" % re.escape(n), text))
                for n in NAMED)
    for m in re.finditer(r"linalg\.generic \{(.*?)\} ins\((.*?)\) outs\(.*?\{\n(.*?)\n\s*\}",
                         text, re.S):
        attrs, ins, body = m.groups()
        if '"reduction"' not in attrs:
            continue
        operands = ins.split(":")[0].split(",")
        if len(operands) != 2:
            continue
        ops = re.findall(r"=\s*([a-z_]+\.[a-z_]+)", body)
        if sorted(ops) in (["arith.addf", "arith.mulf"],
                           ["arith.addi", "arith.muli"]):
            count += 1
    return count


def main():
    source, kernels, lowered = (open(p).read() for p in sys.argv[1:4])
    print("matmul-family ops: %d" % count_matmul_family(source))
    # A fused attention (tp-fuse-attention) stands for its two products.
    fused = len(re.findall(r"call @tp_fused_attention_\d+\(", kernels))
    # A shared-A call (tp-group-gemms) stands for its N products.
    shared = sum(int(n) for n in re.findall(
        r"llvm\.call @tprt_mlir_gemm_shared_a(\d+)_", lowered))
    plain = len(re.findall(
        r"llvm\.call @tprt_mlir_(?:batched_)?gemm_(?!shared_a)", lowered))
    print("gemm calls: %d" % (plain + shared + 2 * fused))
    print("collectives: %d" % len(re.findall(
        r"\btp\.(?:all_reduce|all_gather|reduce_scatter|all_to_all|slice)\b",
        source)))
    print("collective calls: %d" % len(re.findall(
        r"llvm\.call @tprt_mlir_(?:all_reduce|all_gather|reduce_scatter|"
        r"all_to_all|slice)_", lowered)))
    print("kernel launches: %d" % len(re.findall(r"gpu\.launch_func\b", kernels)))
    launched = re.findall(r"gpu\.launch_func\b[^@]*@\w+::@(\w+)", lowered)
    print("distinct kernels launched: %d" % len(set(launched)))
    print("ptx entries: %d" % len(re.findall(r"\.entry ", lowered)))
    print("ptx entries equal to another: %d" % duplicate_entries(lowered))
    print("fused attentions: %d" % fused)


def duplicate_entries(lowered):
    """PTX entry points whose code, their name aside, is another's."""
    seen = set()
    duplicates = 0
    for ptx in re.findall(r'assembly = "(.*?)"', lowered, re.S):
        ptx = ptx.replace("\\0A", "\n").replace("\\09", "\t")
        for body in re.split(r"\.visible \.entry ", ptx)[1:]:
            name = re.match(r"\w+", body).group(0)
            body = body[:body.find("\n}\n") + 3]
            # The name, and the parameters and workgroup buffers named
            # after it.
            code = re.sub(r"%s(?!\d)" % re.escape(name), "KERNEL", body)
            # Block labels number the functions of the module.
            code = re.sub(r"\$L__BB\d+_", "$L__BB_", code)
            duplicates += code in seen
            seen.add(code)
    return duplicates


if __name__ == "__main__":
    main()
