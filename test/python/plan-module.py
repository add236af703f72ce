#!/usr/bin/env python3
"""Drives tp_opt.plan_module on an exported module (no torch needed):
prints str(plan), the layout of each --name, and Plan.explain of each
--explain.

  plan-module.py MODULE.mlir --tp N [--memory-budget B] [--name P ...]
                 [--explain P ...]
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import tp_opt  # noqa: E402
from tp_opt.importer.models import TPImportError  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("module")
    p.add_argument("--tp", type=int)
    p.add_argument("--mesh")
    p.add_argument("--memory-budget")
    p.add_argument("--name", action="append", default=[])
    p.add_argument("--explain", action="append", default=[])
    p.add_argument("--sequence-parallel", action="store_true",
                   help="print Plan.sequence_parallel")
    a = p.parse_args()
    mesh = None
    if a.mesh:
        mesh = {k: int(v) for k, v in
                (kv.split("=") for kv in a.mesh.split(","))}
    try:
        plan = tp_opt.plan_module(a.module, tp=a.tp, mesh=mesh,
                                  memory_budget=a.memory_budget)
        print(plan)
        if a.sequence_parallel:
            print("sequence_parallel", plan.sequence_parallel)
        for n in a.name:
            print("layout %s %s" % (n, plan.layout_of(n)))
        for n in a.explain:
            print(plan.explain(n))
    except TPImportError as e:
        print("error: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
