# -*- Python -*-
# lit configuration for the GoogleTest unit tests: each binary ending in
# "Tests" under the build's test/unittests folder is a test suite.

import lit.formats

config.name = "TP-Unit"
config.suffixes = []
config.test_source_root = config.tp_unittests_dir
config.test_exec_root = config.tp_unittests_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")
