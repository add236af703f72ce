"""Building the model to export: a Hugging Face folder, a transformers name
(random init from a config), or a Python nn.Module (docs/tp-import.md,
"MODEL")."""

import importlib
import importlib.util
import json
import os
import sys

DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}

# transformers' experts implementations (the MoE layers' forward), and what
# each exports to: docs/tp-import.md, "Mixture of experts".
EXPERTS = ("batched_mm", "grouped_mm", "eager")


class TPImportError(Exception):
    """A user-facing error: tp-import prints it as one line and exits 1
    (`tp-import: error: <message>`)."""


class Model:
    def __init__(self, module, is_hf, folder=None, meta=False, checkpoint=None):
        self.module = module        # the nn.Module, eval mode
        self.is_hf = is_hf          # a transformers PreTrainedModel
        self.folder = folder        # the Hugging Face folder it came from
        self.meta = meta            # parameters on the meta device (meta.py)
        self.checkpoint = checkpoint  # checkpoint.Folder of `folder`, if read

    def parameter_bytes(self):
        """Bytes of the parameters in their dtypes (tied ones once)."""
        return sum(p.numel() * p.element_size()
                   for p in self.module.parameters())

    def layer_count(self):
        """The config's number of blocks (None for a plain module)."""
        return layer_count(getattr(self.module, "config", None))


def load_overrides(items):
    out = {}
    for item in items:
        text = item
        if item.startswith("@"):
            try:
                with open(item[1:]) as f:
                    text = f.read()
            except OSError as e:
                raise TPImportError("--config-json %s: %s" % (item, e.strerror))
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise TPImportError("--config-json %r is not JSON: %s" % (item, e))
        if not isinstance(obj, dict):
            raise TPImportError("--config-json %r is not a JSON object" % item)
        out.update(obj)
    return out


def layer_count(config):
    """num_hidden_layers (or an encoder-decoder's larger side, or a
    sub-config's), None when the config has none."""
    if config is None:
        return None
    counts = [getattr(config, a, None) for a in (
        "num_hidden_layers", "encoder_layers", "decoder_layers",
        "num_decoder_layers")]
    counts = [c for c in counts if isinstance(c, int)]
    for sub in ("text_config", "vision_config", "audio_config"):
        c = getattr(config, sub, None)
        if c is not None and c is not config:
            n = layer_count(c)
            if n is not None:
                counts.append(n)
    return max(counts) if counts else None


def set_layers(config, k):
    """Keeps the first k blocks: num_hidden_layers (GPT-2's n_layer and T5's
    num_layers through the attribute map), an encoder-decoder's
    encoder_layers / decoder_layers, per-layer lists (layer_types), and the
    same in sub-configs (text_config, vision_config, ...)."""
    n = getattr(config, "num_hidden_layers", None)
    if n is not None:
        config.num_hidden_layers = k
    for attr in ("encoder_layers", "decoder_layers", "num_decoder_layers"):
        if getattr(config, attr, None) is not None:
            setattr(config, attr, k)
    v = getattr(config, "layer_types", None)
    if isinstance(v, (list, tuple)) and n is not None and len(v) == n:
        config.layer_types = list(v)[:k]
    for sub in ("text_config", "vision_config", "audio_config"):
        c = getattr(config, sub, None)
        if c is not None and c is not config:
            set_layers(c, k)


def pick_model_class(transformers, config, name):
    if name:
        cls = getattr(transformers, name, None)
        if cls is None:
            raise TPImportError("transformers has no class %r" % name)
        return cls
    for arch in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
    for auto in ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM",
                 "AutoModelForMaskedLM", "AutoModelForImageClassification",
                 "AutoModel"):
        a = getattr(transformers, auto, None)
        if a is not None and type(config) in a._model_mapping:
            return a
    raise TPImportError("no model class for config %s; pass --model-class"
                        % type(config).__name__)


def _set_experts(model, impl):
    """Selects transformers' experts implementation where the model has
    experts (a no-op elsewhere)."""
    if impl is None or not hasattr(model, "set_experts_implementation"):
        return
    try:
        if not type(model)._can_set_experts_implementation():
            return
    except Exception:
        return
    if not any("experts" in n.lower() for n, _ in model.named_modules()):
        return
    model.set_experts_implementation(impl)


def _build_error(cls_name, e):
    return TPImportError("cannot build %s from its config: %s: %s (a setting "
                         "--config-json leaves out?)" % (
                             cls_name, type(e).__name__,
                             str(e).strip().splitlines()[0][:200]
                             if str(e).strip() else ""))


def _keep_in_fp32(torch, model, dtype):
    """The parameters transformers keeps in f32 whatever the dtype
    (`_keep_in_fp32_modules[_strict]`), as from_pretrained loads them."""
    get = getattr(model, "_get_dtype_plan", None)
    plan = get(dtype) if get else {}
    if not plan:
        return
    import re
    patterns = [(re.compile(g.replace("*", ".*")), d) for g, d in plan.items()]
    for name, p in list(model.named_parameters()):
        for rx, d in patterns:
            if rx.search(name) and p.dtype != d:
                owner, _, attr = name.rpartition(".")
                mod = model.get_submodule(owner)
                mod._parameters[attr] = torch.nn.Parameter(
                    p.detach().to(d), requires_grad=p.requires_grad)
                break


def _meta_hf(torch, cls, config, tdtype, folder=None):
    """A transformers model with its parameters on the meta device and its
    buffers computed or read from the checkpoint (meta.py)."""
    from . import checkpoint, meta
    ckpt = checkpoint.Folder(folder) if folder else None
    mapping = getattr(cls, "_model_mapping", None)   # an Auto class
    if mapping is not None:
        cls = mapping[type(config)]
    try:
        model = meta.build_hf(torch, cls, config, tdtype)
    except TPImportError:
        raise
    except Exception as e:   # the model's own code on an incomplete config
        raise _build_error(cls.__name__, e)
    if folder:
        _keep_in_fp32(torch, model, tdtype)
    persistent = [n for n in model.state_dict()
                  if n not in dict(model.named_parameters(
                      remove_duplicate=False))]
    stored = ckpt.read(torch, persistent) if ckpt else {}
    try:
        meta.materialize_buffers(torch, model, stored)
    except meta.MissingBuffers as e:   # what building it for real would take
        e.parameter_bytes = sum(p.numel() * p.element_size()
                                for p in model.parameters())
        raise
    return model, ckpt


def _reason(e):
    """The line of an exception that says what is wrong: transformers'
    config validators put it last, after a header line."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    return lines[-1] if lines else type(e).__name__


def _read_folder_config(transformers, folder):
    """The folder's config.json as transformers reads it, or one line that
    says what is wrong with it."""
    path = os.path.join(folder, "config.json")
    try:
        with open(path) as f:
            raw = json.load(f)
    except OSError as e:
        raise TPImportError("cannot read %s: %s" % (path, e.strerror))
    except ValueError as e:
        raise TPImportError("%s is not valid JSON: %s" % (path, e))
    if not isinstance(raw, dict):
        raise TPImportError("%s is not a JSON object (a %s)"
                            % (path, type(raw).__name__))
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise TPImportError("%s has no model_type: transformers cannot tell "
                            "which model it describes" % path)
    if model_type not in transformers.CONFIG_MAPPING:
        raise TPImportError(
            "%s: model_type %r is not a model transformers %s knows"
            % (path, model_type, transformers.__version__))
    try:
        return transformers.AutoConfig.from_pretrained(folder)
    except Exception as e:   # the config class's own validation
        raise TPImportError("%s is not a valid %s config: %s"
                            % (path, model_type, _reason(e)))


def _make_config(make, what):
    """A config built from a model type or class and --config-json: the
    config class's own validation becomes one line."""
    try:
        return make()
    except TPImportError:
        raise
    except Exception as e:
        raise TPImportError("%s: %s (check --config-json)" % (what, _reason(e)))


def _check_model_type(config, model_type, spec):
    if model_type is not None and model_type != config.model_type:
        raise TPImportError(
            "--config-json gives model_type %r, but %s is a %r model"
            % (model_type, spec, config.model_type))


def build(torch, spec, dtype="f32", config_json=(), layers=None,
          model_class=None, module_kwargs="{}", seed=0,
          attn_implementation="eager", experts_implementation="batched_mm",
          meta=False):
    """Returns a Model. Raises TPImportError for bad input. meta=True builds
    it without weights: parameters on the meta device, buffers real
    (meta.py); meta.MissingBuffers when a buffer has no value then."""
    tdtype = getattr(torch, DTYPES[dtype])
    overrides = load_overrides(config_json)
    # --config-json is often a config.json's own text, whose model_type
    # names the model again: not a field to set, but it must agree.
    model_type = overrides.pop("model_type", None)

    # Python nn.Module: module:Class or file.py:Class.
    if ":" in spec and not os.path.isdir(spec):
        modname, _, clsname = spec.rpartition(":")
        if modname.endswith(".py") or os.path.sep in modname:
            path = os.path.abspath(modname)
            if not os.path.exists(path):
                raise TPImportError("no such file: %s" % modname)
            s = importlib.util.spec_from_file_location(
                os.path.splitext(os.path.basename(path))[0], path)
            mod = importlib.util.module_from_spec(s)
            sys.path.insert(0, os.path.dirname(path))
            s.loader.exec_module(mod)
        else:
            sys.path.insert(0, os.getcwd())
            try:
                mod = importlib.import_module(modname)
            except ImportError as e:
                raise TPImportError("cannot import %s: %s" % (modname, e))
        cls = getattr(mod, clsname, None)
        if cls is None:
            raise TPImportError("%s has no attribute %r" % (modname, clsname))
        try:
            kwargs = json.loads(module_kwargs)
        except ValueError as e:
            raise TPImportError("--module-kwargs is not JSON: %s" % e)
        torch.manual_seed(seed)
        if meta:
            from .meta import params_on_meta
            with params_on_meta(torch):
                model = cls(**kwargs)
        else:
            model = cls(**kwargs)
        return Model(model.to(tdtype).eval(), False, meta=meta)

    import transformers
    transformers.utils.logging.disable_progress_bar()
    config_base = getattr(transformers, "PreTrainedConfig", None) or \
        transformers.PretrainedConfig

    # Hugging Face folder.
    if os.path.isdir(spec):
        if not os.path.exists(os.path.join(spec, "config.json")):
            raise TPImportError("%s has no config.json" % spec)
        config = _read_folder_config(transformers, spec)
        _check_model_type(config, model_type, spec)
        for k, v in overrides.items():
            setattr(config, k, v)
        if layers is not None:
            set_layers(config, layers)
        config._attn_implementation = attn_implementation
        cls = pick_model_class(transformers, config, model_class)
        if meta:
            model, ckpt = _meta_hf(torch, cls, config, tdtype, folder=spec)
            _set_experts(model, experts_implementation)
            return Model(model.eval(), True, folder=spec, meta=True,
                         checkpoint=ckpt)
        # With fewer layers than the folder stores, transformers reports
        # every weight of the others as unexpected: that is the point.
        verbosity = transformers.utils.logging.get_verbosity()
        if layers is not None:
            transformers.utils.logging.set_verbosity_error()
        try:
            model = cls.from_pretrained(
                spec, config=config, dtype=tdtype,
                attn_implementation=attn_implementation)
        finally:
            transformers.utils.logging.set_verbosity(verbosity)
        _set_experts(model, experts_implementation)
        return Model(model.eval(), True, folder=spec)

    # A transformers name: model type, config class or model class.
    obj = getattr(transformers, spec, None)
    model_cls = None
    what = "cannot make a %s config" % spec
    if isinstance(obj, type) and issubclass(obj, config_base):
        config = _make_config(lambda: obj(**overrides), what)
    elif isinstance(obj, type) and issubclass(obj, transformers.PreTrainedModel):
        model_cls = obj if not model_class else None   # --model-class wins
        config = _make_config(lambda: obj.config_class(**overrides), what)
    elif spec in transformers.CONFIG_MAPPING:
        config = _make_config(
            lambda: transformers.AutoConfig.for_model(spec, **overrides), what)
    else:
        raise TPImportError(
            "%r is neither a folder, a module:Class, nor a transformers "
            "model type / config class / model class" % spec)
    _check_model_type(config, model_type, spec)
    if layers is not None:
        set_layers(config, layers)
    config._attn_implementation = attn_implementation
    if model_cls is None:
        model_cls = pick_model_class(transformers, config, model_class)
    # Parameters in `dtype` and buffers as the model computes them (RoPE's
    # inv_freq stays f32), as from_pretrained loads a checkpoint.
    if meta:
        model, _ = _meta_hf(torch, model_cls, config, tdtype)
    else:
        torch.manual_seed(seed)
        make = getattr(model_cls, "from_config", None) or \
            model_cls._from_config
        try:
            model = make(config, dtype=tdtype,
                         attn_implementation=attn_implementation)
        except Exception as e:   # the model's own code on an incomplete config
            raise _build_error(model_cls.__name__, e)
    for p in model.parameters():
        if p.is_floating_point() and p.dtype != tdtype:
            p.data = p.data.to(tdtype)
    _keep_in_fp32(torch, model, tdtype)
    _set_experts(model, experts_implementation)
    return Model(model.eval(), True, meta=meta)
