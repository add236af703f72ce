"""Prints the tp.name and shape of every argument and result of the first
func.func in an MLIR file, sorted by name, one per line: the signature a
Hugging Face checkpoint has to match. hf-names.test compares tp-gen --hf
with the IR torch-mlir exported from transformers (test/frontends)."""
import re
import sys

text = open(sys.argv[1]).read()
start = text.index("func.func")
header = text[start:text.index("{\n", start)]
# tensor<SHAPExTYPE> {ATTRS}, ATTRS holding at most one level of braces.
pattern = r'tensor<([^>]*)>\s*\{((?:[^{}]|\{[^{}]*\})*)\}'
rows = []
for type_, attrs in re.findall(pattern, header):
    name = re.search(r'tp\.name = "([^"]+)"', attrs)
    if name:
        shape = "x".join(type_.split("x")[:-1]) or "scalar"
        rows.append((name.group(1), shape))
for name, shape in sorted(rows):
    print(name, shape)
