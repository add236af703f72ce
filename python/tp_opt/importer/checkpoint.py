"""A Hugging Face folder's checkpoint read for names and shapes only: the
safetensors headers (one file, or the shards of
`model.safetensors.index.json`), never the weights, so reading a 70B folder
costs a few megabytes. Small tensors (the buffers a checkpoint stores) are
read on request. PyTorch `.bin` checkpoints are opened memory-mapped, which
reads no weight either.

Every defect of the folder is one TPImportError naming the file: a missing
or truncated shard, a header that is not safetensors, an index whose
weight_map is empty or names shards that are not there.
"""

import json
import os
import struct

from .models import TPImportError

# safetensors dtype names -> bytes per element
ELEMENT_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4,
                 "I16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1,
                 "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}


class Entry:
    def __init__(self, shape, dtype, file):
        self.shape = tuple(shape)
        self.dtype = dtype      # safetensors' name (BF16, F32, ...)
        self.file = file


def _header(path):
    """{key: Entry} of one safetensors file, its size checked against the
    offsets the header gives."""
    name = os.path.basename(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise TPImportError("%s is not a safetensors file (%d bytes)"
                                    % (path, size))
            (n,) = struct.unpack("<Q", head)
            if n > min(size - 8, 100 << 20):
                raise TPImportError("%s is not a safetensors file (its header "
                                    "length %d exceeds the file)" % (path, n))
            meta = json.loads(f.read(n).decode("utf-8"))
    except OSError as e:
        raise TPImportError("cannot read %s: %s" % (path, e.strerror))
    except (ValueError, UnicodeDecodeError) as e:
        raise TPImportError("%s: the safetensors header is not JSON (%s)"
                            % (path, e))
    if not isinstance(meta, dict):
        raise TPImportError("%s: the safetensors header is not an object"
                            % path)
    out, end = {}, 0
    for key, v in meta.items():
        if key == "__metadata__":
            continue
        try:
            shape, dtype = [int(d) for d in v["shape"]], str(v["dtype"])
            lo, hi = [int(o) for o in v["data_offsets"]]
        except (KeyError, TypeError, ValueError):
            raise TPImportError("%s: malformed header entry for %r"
                                % (path, key))
        out[key] = Entry(shape, dtype, name)
        end = max(end, hi)
    if 8 + n + end > size:
        raise TPImportError("%s is truncated: its header describes %d bytes of "
                            "tensors, the file holds %d" % (
                                path, end, size - 8 - n))
    return out


class Folder:
    """The tensors a folder's checkpoint stores: `entries` {key: Entry}."""

    def __init__(self, folder):
        self.folder = folder
        self.entries = {}
        self.kind = None
        index = os.path.join(folder, "model.safetensors.index.json")
        single = os.path.join(folder, "model.safetensors")
        if os.path.exists(index):
            self.kind = "safetensors"
            try:
                with open(index) as f:
                    weight_map = json.load(f).get("weight_map")
            except (OSError, ValueError, AttributeError) as e:
                raise TPImportError("%s is not a safetensors index: %s"
                                    % (index, e))
            if not isinstance(weight_map, dict) or not weight_map:
                raise TPImportError("%s has an empty weight_map" % index)
            headers = {}
            for shard in sorted(set(weight_map.values())):
                path = os.path.join(folder, str(shard))
                if not os.path.exists(path):
                    raise TPImportError(
                        "%s names the shard %s, which is not in the folder"
                        % (index, shard))
                headers[shard] = _header(path)
            for key, shard in weight_map.items():
                if key not in headers[shard]:
                    raise TPImportError("%s maps %s to %s, which does not "
                                        "store it" % (index, key, shard))
                self.entries[key] = headers[shard][key]
        elif os.path.exists(single):
            self.kind = "safetensors"
            self.entries = _header(single)
        else:
            files = sorted(f for f in os.listdir(folder)
                           if f.endswith(".safetensors"))
            bins = sorted(f for f in os.listdir(folder)
                          if f.endswith(".bin") and f.startswith("pytorch_model"))
            if files:
                self.kind = "safetensors"
                for f in files:
                    self.entries.update(_header(os.path.join(folder, f)))
            elif bins:
                self.kind = "bin"
                self._bins = bins
            else:
                # A config-only folder: enough for the export (shapes come
                # from config.json), not for anything that needs weights.
                self.missing = (
                    "%s has no weights (no *.safetensors, no "
                    "model.safetensors.index.json, no pytorch_model*.bin)"
                    % folder)

    missing = None   # why the folder has no weights, when it has none

    def read(self, torch, keys):
        """{key: tensor} for the keys the checkpoint stores (small tensors:
        buffers)."""
        out = {}
        if self.kind == "bin":
            for b in self._bins:
                state = torch.load(os.path.join(self.folder, b), mmap=True,
                                   weights_only=True, map_location="cpu")
                for k in keys:
                    if k in state:
                        out[k] = state[k].clone()
            return out
        from safetensors import safe_open
        by_file = {}
        for k in keys:
            if k in self.entries:
                by_file.setdefault(self.entries[k].file, []).append(k)
        for f, ks in by_file.items():
            with safe_open(os.path.join(self.folder, f), framework="pt") as h:
                for k in ks:
                    out[k] = h.get_tensor(k)
        return out

    def check_arguments(self, names, shapes):
        """Every argument key is stored, with its shape: otherwise tp-run
        --checkpoint FOLDER could not feed the module."""
        if self.kind != "safetensors":
            return
        missing = [n for n in names if n not in self.entries]
        if missing:
            raise TPImportError(
                "the folder's checkpoint does not store %s (of the %d "
                "parameters the model has; it stores %d tensors): it was not "
                "written by save_pretrained for this model and config" % (
                    ", ".join(missing[:3]) +
                    (" and %d more" % (len(missing) - 3)
                     if len(missing) > 3 else ""),
                    len(names), len(self.entries)))
        for n, s in zip(names, shapes):
            if tuple(s) != self.entries[n].shape:
                raise TPImportError(
                    "the folder's checkpoint stores %s as %s, the model "
                    "expects %s (does config.json match the weights?)" % (
                        n, list(self.entries[n].shape), list(s)))
