#!/usr/bin/env python3
"""Prints one line per tensor of a safetensors file, sorted by name:
NAME DTYPE [SHAPE] BYTES bytes (and checks that the offsets tile the data)."""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    length = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(length))
    data = f.read()
end = 0
for name in sorted(header, key=lambda n: header[n]["data_offsets"][0]):
    if name == "__metadata__":
        continue
    begin, stop = header[name]["data_offsets"]
    assert begin == end, "gap or overlap before %s" % name
    end = stop
assert end == len(data), "%d bytes of data, offsets end at %d" % (len(data), end)
for name in sorted(header):
    if name == "__metadata__":
        continue
    t = header[name]
    begin, stop = t["data_offsets"]
    print("%s %s %s %d bytes" % (name, t["dtype"], t["shape"], stop - begin))
