"""Finding tp-opt's command-line tools: `$TP_OPT_BIN` (a folder holding
tp-opt, or the tp-opt binary itself; when set, the only place looked), else
the build tree this package was installed from or runs in
(`<checkout>/build/bin`), then `PATH`."""

import os
import shutil

from .importer.models import TPImportError


class ToolNotFound(TPImportError):
    pass


def _build_dirs():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = []
    try:
        from . import _paths   # written by setup.py at install time
        dirs.append(_paths.BUILD_BIN)
    except ImportError:
        pass
    # Running from a checkout: python/tp_opt -> <checkout>/build/bin.
    dirs.append(os.path.join(os.path.dirname(os.path.dirname(here)),
                             "build", "bin"))
    return dirs


def find(tool="tp-opt"):
    """The path of `tool` (tp-opt, tp-run); raises ToolNotFound naming the
    places it looked."""
    looked = []
    env = os.environ.get("TP_OPT_BIN")
    if env:
        cand = env if os.path.isdir(env) else os.path.dirname(env)
        path = os.path.join(cand, tool)
        if os.access(path, os.X_OK):
            return path
        raise ToolNotFound("TP_OPT_BIN=%s: no executable %s there" % (env, tool))
    for d in _build_dirs():
        path = os.path.join(d, tool)
        if os.access(path, os.X_OK):
            return path
        looked.append(d)
    path = shutil.which(tool)
    if path:
        return path
    looked.append("PATH")
    raise ToolNotFound(
        "cannot find %s (looked in %s): build tp-opt (./scripts/build.sh) "
        "and set TP_OPT_BIN to its build/bin folder" % (tool, ", ".join(looked)))
