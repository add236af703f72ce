#!/usr/bin/env python3
"""tp_opt.importer.meta on models made here: a transformers model built on
the meta device gets its buffers from the checkpoint (when given) or from
its own _init_weights, with the values a model built with its weights has;
a buffer neither gives is named by MissingBuffers; a plain module built
under params_on_meta has meta parameters and real buffers. Prints one line
per check (tp-import-buffers.test)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))

import torch  # noqa: E402
import transformers  # noqa: E402
from tp_opt.importer import meta  # noqa: E402


class TinyConfig(transformers.PretrainedConfig):
    model_type = "tp-tiny"

    def __init__(self, width=8, orphan=False, **kw):
        self.width = width
        self.orphan = orphan
        super().__init__(**kw)


class Tiny(transformers.PreTrainedModel):
    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        w = config.width
        self.proj = torch.nn.Linear(w, w)
        # computed: non-persistent, recomputed by _init_weights
        self.register_buffer("freq", 1.0 / (100.0 ** (torch.arange(w) / w)),
                             persistent=False)
        # stored: a checkpoint holds it
        self.register_buffer("table", torch.full((w,), 3.0))
        if config.orphan:   # no initializer knows it
            self.register_buffer("orphan", torch.ones(w), persistent=False)
        self.post_init()

    def _init_weights(self, module):
        super()._init_weights(module)
        if module is self:
            w = self.config.width
            transformers.initialization.copy_(
                self.freq, 1.0 / (100.0 ** (torch.arange(w) / w)))
            transformers.initialization.ones_(self.table)

    def forward(self, x):
        return self.proj(x) * self.freq + self.table


def main():
    torch.set_grad_enabled(False)
    real = Tiny(TinyConfig())
    m = meta.build_hf(torch, Tiny, TinyConfig(), torch.float32)
    print("parameters on meta:", all(p.device.type == "meta"
                                     for p in m.parameters()))
    meta.materialize_buffers(torch, m)
    print("freq computed:", torch.equal(m.freq, real.freq))
    print("table initialized:", m.table.tolist() == [1.0] * 8)

    m = meta.build_hf(torch, Tiny, TinyConfig(), torch.float32)
    meta.materialize_buffers(torch, m, {"table": torch.arange(8.0)})
    print("table from the checkpoint:", m.table.tolist() == list(range(8)),
          "freq computed:", torch.equal(m.freq, real.freq))

    m = meta.build_hf(torch, Tiny, TinyConfig(orphan=True), torch.float32)
    try:
        meta.materialize_buffers(torch, m)
        print("orphan: no error")
    except meta.MissingBuffers as e:
        print("orphan:", e)

    with meta.params_on_meta(torch):
        plain = torch.nn.BatchNorm1d(4)
    print("plain module: weight on", plain.weight.device.type,
          "running_var on", plain.running_var.device.type,
          plain.running_var.tolist())
    lin = torch.nn.Linear(2, 2)
    print("outside the context: weight on", lin.weight.device.type)

    mode, fakes = meta.fake_tensors(torch, [torch.empty(3, 5,
                                                        device="meta")])
    print("fake:", type(fakes[0]).__name__, fakes[0].device.type,
          tuple(fakes[0].shape))


if __name__ == "__main__":
    main()
