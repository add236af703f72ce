"""Checks the `training` section of a tp-propagate report: every weight's
update, gradients and optimizer states have the weight's layout. Prints
`layouts: N weights, each update, gradient and state laid out like its
weight` or names the first weight that differs and exits 1
(train-megatron.test)."""
import json
import sys

report = json.load(open(sys.argv[1]))
for fn in report["functions"]:
    training = fn.get("training")
    if not training:
        sys.exit("function %s is not a training step" % fn["function"])
    params = training["params"]
    for p in params:
        if not p["update_layouts"] or not p["gradient_layouts"]:
            sys.exit("weight %s: no update or no gradient found" % p["name"])
        for kind in ("update_layouts", "gradient_layouts", "state_layouts"):
            for layout in p[kind]:
                if layout != p["layout"]:
                    sys.exit("weight %s has layout %s but a %s %s" % (
                        p["name"], p["layout"], kind[:-8], layout))
    print("layouts: %d weights, each update, gradient and state laid out "
          "like its weight" % len(params))
