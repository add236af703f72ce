"""Reading what the planner wrote: the signature of the planned @main
(`tp.name`, `tp.layout`, `tp.source` of each argument) and `#tp.layout`
attributes as per-dimension mesh axes plus partial axes.

A layout `#tp.layout<@tp, [-, "tp"]>` becomes Layout(dims=[(), ("tp",)],
partial={}); a dimension split over several axes lists them major first."""

import re


class Layout:
    def __init__(self, dims, partial=None):
        self.dims = dims              # per tensor dimension: tuple of axes
        self.partial = partial or {}  # axis -> reduction

    def is_replicated(self):
        return not any(self.dims) and not self.partial

    def split_dims(self, axis):
        """The tensor dimensions split over `axis`."""
        return [d for d, axes in enumerate(self.dims) if axis in axes]

    def __eq__(self, other):
        return isinstance(other, Layout) and self.dims == other.dims and \
            self.partial == other.partial

    def __repr__(self):
        dims = ", ".join("-" if not a else
                         (a[0] if len(a) == 1 else "(" + " ".join(a) + ")")
                         for a in self.dims)
        part = "".join(" partial=%s(%s)" % (r, a)
                       for a, r in sorted(self.partial.items()))
        return "[%s]%s" % (dims, part)


def parse_layout(text):
    """'#tp.layout<@tp, [-, "tp"], partial = sum("tp")>' -> Layout."""
    m = re.match(r'#tp\.layout<@[\w.]+,\s*\[(.*?)\](.*)>$', text.strip(), re.S)
    if not m:
        raise ValueError("not a #tp.layout: %s" % text)
    dims = []
    body = m.group(1).strip()
    for part in _split_top(body) if body else []:
        dims.append(tuple(re.findall(r'"([^"]+)"', part)))
    partial = {}
    for red, axes in re.findall(r'(\w+)\(([^)]*)\)', m.group(2)):
        for a in re.findall(r'"([^"]+)"', axes):
            partial[a] = red
    return Layout(dims, partial)


def _split_top(text, sep=","):
    """Splits at `sep` outside brackets and quotes."""
    out, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "[{(<":
            depth += 1
        elif not quote and ch in "]})>":
            depth -= 1
        if ch == sep and depth == 0 and not quote:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


class Argument:
    def __init__(self, index, name, shape, dtype, layout, param, source):
        self.index = index
        self.name = name
        self.shape = shape            # the argument's global shape
        self.dtype = dtype
        self.layout = layout          # Layout, or None when not planned
        self.param = param
        self.source = source          # (offsets, shape of the stored tensor)

    def __repr__(self):
        return "Argument(%s %s %s%s)" % (
            self.name, "x".join(map(str, self.shape)), self.layout,
            " source=%s" % (self.source,) if self.source else "")


def _i64_array(text, key):
    """`key = array<i64: 0, 64>` in an attribute dictionary -> [0, 64]."""
    m = re.search(r"%s\s*=\s*array<i64(?::([^>]*))?>" % key, text)
    if not m:
        raise ValueError("no %s in %s" % (key, text))
    return [int(x) for x in re.findall(r"-?\d+", m.group(1) or "")]


def parse_signature(text, func="main"):
    """The arguments of `func` in a module's text, in order."""
    m = re.search(r"func\.func @%s\(" % re.escape(func), text)
    if not m:
        raise ValueError("no func.func @%s in the module" % func)
    i, depth = m.end(), 1
    start = i
    while depth:
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        i += 1
    args = []
    for k, part in enumerate(_split_top(text[start:i - 1])):
        am = re.match(r"%[\w]+\s*:\s*(tensor<([^>]*)>|[\w]+)\s*(\{.*\})?$",
                      part, re.S)
        if not am:
            raise ValueError("cannot read argument %d: %s" % (k, part[:80]))
        shape, dtype = [], am.group(1)
        if am.group(2) is not None:
            dims = am.group(2).split("x")
            dtype = dims[-1]
            shape = [int(d) for d in dims[:-1]]
        attrs = {}
        if am.group(3):
            for a in _split_top(am.group(3)[1:-1]):
                key, _, value = a.partition("=")
                attrs[key.strip()] = value.strip()
        name = attrs.get("tp.name", '"arg%d"' % k).strip('"')
        layout = parse_layout(attrs["tp.layout"]) if "tp.layout" in attrs \
            else None
        source = None
        if "tp.source" in attrs:
            source = tuple(_i64_array(attrs["tp.source"], key)
                           for key in ("offsets", "shape"))
        args.append(Argument(k, name, shape, dtype, layout,
                             "tp.param" in attrs, source))
    return args
