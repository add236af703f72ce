"""Rewrites a model.json so that output 1 (a training step's first updated
weight) declares a layout other than its argument's: the split moves to the
other dimension, with local shapes to match (run-train-errors.test)."""
import json
import sys

path = sys.argv[1]
model = json.load(open(path))
outputs = [b for b in model["buffers"] if b["role"] == "output"]
out = outputs[1]
dims = out["layout"]["dims"]
size = 1
for axis in model["mesh"]["axes"]:
    size *= axis["size"]
split = [i for i, d in enumerate(dims) if d]
axes = [a["name"] for a in model["mesh"]["axes"]]
# Move the split (or make one) onto the other dimension.
target = 0 if (not split or split[0] == 1) else 1
out["layout"]["dims"] = [[] for _ in dims]
out["layout"]["dims"][target] = axes
out["local_shape"] = list(out["global_shape"])
out["local_shape"][target] = -(-out["global_shape"][target] // size)
json.dump(model, open(path, "w"))
