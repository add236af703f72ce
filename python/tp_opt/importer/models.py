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
    def __init__(self, module, is_hf, folder=None):
        self.module = module        # the nn.Module, eval mode
        self.is_hf = is_hf          # a transformers PreTrainedModel
        self.folder = folder        # the Hugging Face folder it came from


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


def build(torch, spec, dtype="f32", config_json=(), layers=None,
          model_class=None, module_kwargs="{}", seed=0,
          attn_implementation="eager", experts_implementation="batched_mm"):
    """Returns a Model. Raises TPImportError for bad input."""
    tdtype = getattr(torch, DTYPES[dtype])
    overrides = load_overrides(config_json)

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
        model = cls(**kwargs)
        return Model(model.to(tdtype).eval(), False)

    import transformers
    transformers.utils.logging.disable_progress_bar()
    config_base = getattr(transformers, "PreTrainedConfig", None) or \
        transformers.PretrainedConfig

    # Hugging Face folder.
    if os.path.isdir(spec):
        if not os.path.exists(os.path.join(spec, "config.json")):
            raise TPImportError("%s has no config.json" % spec)
        config = transformers.AutoConfig.from_pretrained(spec)
        for k, v in overrides.items():
            setattr(config, k, v)
        if layers is not None:
            set_layers(config, layers)
        config._attn_implementation = attn_implementation
        cls = pick_model_class(transformers, config, model_class)
        model = cls.from_pretrained(spec, config=config, dtype=tdtype,
                                    attn_implementation=attn_implementation)
        _set_experts(model, experts_implementation)
        return Model(model.eval(), True, folder=spec)

    # A transformers name: model type, config class or model class.
    obj = getattr(transformers, spec, None)
    model_cls = None
    if isinstance(obj, type) and issubclass(obj, config_base):
        config = obj(**overrides)
    elif isinstance(obj, type) and issubclass(obj, transformers.PreTrainedModel):
        model_cls = obj if not model_class else None   # --model-class wins
        config = obj.config_class(**overrides)
    else:
        try:
            config = transformers.AutoConfig.for_model(spec, **overrides)
        except ValueError:
            raise TPImportError(
                "%r is neither a folder, a module:Class, nor a transformers "
                "model type / config class / model class" % spec)
    if layers is not None:
        set_layers(config, layers)
    config._attn_implementation = attn_implementation
    if model_cls is None:
        model_cls = pick_model_class(transformers, config, model_class)
    torch.manual_seed(seed)
    make = getattr(model_cls, "from_config", None) or model_cls._from_config
    try:
        model = make(config, dtype=tdtype,
                     attn_implementation=attn_implementation)
    except Exception as e:   # the model's own code on an incomplete config
        raise TPImportError("cannot build %s from its config: %s: %s (a "
                            "setting --config-json leaves out?)" % (
                                model_cls.__name__, type(e).__name__,
                                str(e).strip().splitlines()[0][:200]
                                if str(e).strip() else ""))
    _set_experts(model, experts_implementation)
    return Model(model.to(tdtype).eval(), True)
