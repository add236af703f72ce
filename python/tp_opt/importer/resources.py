"""Time and memory of an import: the seconds of each stage (tp-import's
`stages:` line and --report), the process's peak memory, and whether the
model with its weights fits this machine, which decides how much of it the
self-check runs (docs/tp-import.md, "The self-check").

A model "fits" when building it with its weights, writing them for tp-run
(unless tp-run reads the model's own folder) and tp-run's own copy all fit
in the memory the kernel reports available, with a margin, and this
process's part inside its address-space limit (`ulimit -v`), if one is
set.
"""

import contextlib
import re
import resource
import time

MARGIN = 1 << 30


class Stages:
    def __init__(self):
        self.seconds = {}     # stage -> seconds, in the order first run

    @contextlib.contextmanager
    def stage(self, name):
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + \
                time.monotonic() - start

    def line(self, report):
        parts = ["%s %.1f s" % (k, v) for k, v in self.seconds.items()]
        text = "stages: " + ", ".join(parts)
        text += "; total %.1f s" % sum(self.seconds.values())
        text += "; peak memory %s" % gb(report.get("peak_rss_bytes", 0))
        return text


def gb(n):
    if n >= 1 << 30:
        return "%.1f GB" % (n / float(1 << 30))
    return "%d MB" % (n // (1 << 20))


def peak_rss():
    """This process's peak resident memory in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _proc_field(path, field):
    """A `Field: N kB` line of /proc/self/status or /proc/meminfo, in
    bytes; None when absent."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def address_space_left():
    """Bytes this process may still map under `ulimit -v`, or None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(0, soft - (_proc_field("/proc/self/status", "VmSize") or 0))


def available():
    """Memory the machine can give a model now: MemAvailable, bounded by
    the address space left under `ulimit -v`."""
    avail = _proc_field("/proc/meminfo", "MemAvailable")
    if avail is None:
        avail = 1 << 62
    left = address_space_left()
    if left is not None:
        avail = min(avail, left)
    return avail


_LAYER = re.compile(r"(?:^|\.)(\d+)(?:\.|$)")


def parameter_bytes(model, prefix=False):
    """Bytes of the parameters; with prefix=K, of those outside numbered
    blocks and in blocks 0..K-1 only (the first K layers of every stack)."""
    total = 0
    for name, p in model.module.named_parameters():
        if prefix is not False:
            m = _LAYER.search(name)
            if m and int(m.group(1)) >= prefix:
                continue
        total += p.numel() * p.element_size()
    return total


class Need:
    """Bytes a step needs: `total` available on the machine (this process
    and tp-run's), `own` of them in this process's address space."""

    def __init__(self, total, own):
        self.total, self.own = total, own


def needed(model, prefix=False):
    """What a self-check of the model (or of its first `prefix` layers)
    needs: the model with its weights and, unless tp-run reads the model's
    own folder, the weights written for tp-run, in this process; tp-run's
    copy in its own."""
    p = parameter_bytes(model, prefix)
    own = p + (0 if model.folder else p) + MARGIN
    return Need(own + p, own)


def needed_for_files(model, weights):
    """What --reference (the model with its weights, run once) and
    --weights (also an f32 copy of them) need."""
    p = parameter_bytes(model)
    if weights:
        p += 4 * sum(t.numel() for t in model.module.parameters())
    return Need(p + MARGIN, p + MARGIN)


def fits(need):
    avail = _proc_field("/proc/meminfo", "MemAvailable")
    if avail is not None and need.total > avail:
        return False
    left = address_space_left()
    return left is None or need.own <= left
