"""Installs tp_opt and records where its tools were built: the checkout
this folder belongs to (<checkout>/build/bin), written into
tp_opt/_paths.py of the installed package, so that an installed tp_opt
finds tp-opt without TP_OPT_BIN (tp_opt/tools.py)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_BIN = os.path.join(os.path.dirname(HERE), "build", "bin")


class BuildPy(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "tp_opt", "_paths.py")
        with open(target, "w") as f:
            f.write("# Written by setup.py at install time.\n"
                    "BUILD_BIN = %r\n" % BUILD_BIN)


setup(cmdclass={"build_py": BuildPy})
