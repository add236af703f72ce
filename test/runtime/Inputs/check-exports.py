#!/usr/bin/env python3
"""Checks the dynamic symbols of libtprt.so against the C ABI.

    check-exports.py TPRT_H NM_OUTPUT

NM_OUTPUT is `nm -D --defined-only libtprt.so`. Every exported symbol must
start with tprt_ (no C++ or other internal symbols leak), and every function
tprt.h declares must be exported. Prints one summary line and exits 0, or
lists the offenders and exits 1.
"""
import re
import sys

header, symbols_file = sys.argv[1], sys.argv[2]
declared = set(re.findall(r"TPRT_API\s[^;(]*?\b(tprt_\w+)\s*\(",
                          open(header).read()))
exported = set()
for line in open(symbols_file):
    fields = line.split()
    if fields:
        exported.add(fields[-1])

foreign = sorted(name for name in exported if not name.startswith("tprt_"))
missing = sorted(declared - exported)
for name in foreign:
    print("exported without the tprt_ prefix: " + name)
for name in missing:
    print("declared in tprt.h but not exported: " + name)
if foreign or missing or not declared:
    sys.exit(1)
print("all exports start with tprt_; the %d functions of tprt.h are exported"
      % len(declared))
