"""A float64 numpy reference of tp-gen's training step (docs/models.md).

Written from the GPT-2 and Llama definitions (Hugging Face's GPT2LMHeadModel
and LlamaForCausalLM, weights stored [in, out]) and from the AdamW formula of
torch.optim.AdamW, not from the generated IR:

  loss(cfg, params, ids, labels)     the mean cross-entropy of the forward pass
  finite_difference_grads(...)       central differences of loss, per element
  adamw(...)                         one AdamW update of a parameter

`params` maps the parameter names of docs/models.md to float64 arrays of the
shapes tp-gen gives them. `cfg` is the dictionary of check-numerics.py's
header parser: arch, layers, hidden, heads, kv-heads, ffn, vocab, seq, batch,
norm-eps, rope-theta.
"""

import numpy as np

from tp_init import layer_param_names


def param_names(cfg):
    """The parameters of a --train function (embedding and loss), model
    order."""
    if cfg["arch"] == "gpt2":
        names = ["wte.weight", "wpe.weight"]
        for l in range(cfg["layers"]):
            names += layer_param_names("gpt2", l)
        return names + ["ln_f.weight", "ln_f.bias"]
    names = ["embed_tokens.weight"]
    for l in range(cfg["layers"]):
        names += layer_param_names("llama", l)
    return names + ["norm.weight", "lm_head.weight"]


def layer_norm(x, g, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, theta):
    """Rotate-half rotary embedding of x[B, S, heads, D]; position = s."""
    S, D = x.shape[1], x.shape[3]
    half = D // 2
    inv = theta ** (-2.0 * np.arange(half) / D)
    angle = np.arange(S)[:, None] * inv[None, :]          # [S, D/2]
    cos = np.cos(angle)[None, :, None, :]
    sin = np.sin(angle)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def attention(q, k, v):
    """Causal attention of q[B, S, h, D], k/v[B, S, kv, D] (grouped)."""
    B, S, nh, D = q.shape
    group = nh // k.shape[2]
    k = np.repeat(k, group, axis=2)
    v = np.repeat(v, group, axis=2)
    scores = np.einsum("bshd,bthd->bhst", q, k) / np.sqrt(D)
    future = np.triu(np.ones((S, S), dtype=bool), 1)
    scores = np.where(future, -np.inf, scores)
    scores = scores - scores.max(-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhst,bthd->bshd", p, v)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) *
                                    (x + 0.044715 * x ** 3)))


def loss(cfg, P, ids, labels):
    """Mean cross-entropy of the forward pass; ids, labels: int [B, S]."""
    B, S, H = cfg["batch"], cfg["seq"], cfg["hidden"]
    nh, nkv = cfg["heads"], cfg["kv-heads"]
    D, eps = H // nh, cfg["norm-eps"]
    T = B * S
    if cfg["arch"] == "gpt2":
        x = (P["wte.weight"][ids] + P["wpe.weight"][None, :S]).reshape(T, H)
        for l in range(cfg["layers"]):
            p = "h.%d." % l
            h = layer_norm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"], eps)
            qkv = (np.einsum("tk,kcj->tcj", h, P[p + "attn.c_attn.weight"]) +
                   P[p + "attn.c_attn.bias"])
            q, k, v = (qkv[:, c].reshape(B, S, nh, D) for c in range(3))
            ctx = attention(q, k, v).reshape(T, H)
            x = x + ctx @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"]
            h = layer_norm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"], eps)
            f = gelu(h @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"])
            x = x + f @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"]
        h = layer_norm(x, P["ln_f.weight"], P["ln_f.bias"], eps)
        logits = h @ P["wte.weight"].T                  # tied LM head
    else:
        x = P["embed_tokens.weight"][ids].reshape(T, H)
        theta = cfg["rope-theta"]
        for l in range(cfg["layers"]):
            p = "layers.%d." % l
            h = rms_norm(x, P[p + "input_layernorm.weight"], eps)
            q = (h @ P[p + "self_attn.q_proj.weight"]).reshape(B, S, nh, D)
            k = (h @ P[p + "self_attn.k_proj.weight"]).reshape(B, S, nkv, D)
            v = (h @ P[p + "self_attn.v_proj.weight"]).reshape(B, S, nkv, D)
            ctx = attention(rope(q, theta), rope(k, theta), v).reshape(T, H)
            x = x + ctx @ P[p + "self_attn.o_proj.weight"]
            h = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
            g = h @ P[p + "mlp.gate_proj.weight"]
            u = h @ P[p + "mlp.up_proj.weight"]
            x = x + (g / (1.0 + np.exp(-g)) * u) @ P[p + "mlp.down_proj.weight"]
        logits = rms_norm(x, P["norm.weight"], eps) @ P["lm_head.weight"]
    m = logits.max(-1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(-1))
    return float(np.mean(lse - logits[np.arange(T), labels.reshape(T)]))


def finite_difference_grads(cfg, P, ids, labels, h=1e-6):
    """d loss / d P[name], by central differences of every element."""
    grads = {}
    for name, value in P.items():
        g = np.zeros_like(value)
        flat, gflat = value.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            saved = flat[i]
            flat[i] = saved + h
            up = loss(cfg, P, ids, labels)
            flat[i] = saved - h
            down = loss(cfg, P, ids, labels)
            flat[i] = saved
            gflat[i] = (up - down) / (2.0 * h)
        grads[name] = g
    return grads


def adamw(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay):
    """torch.optim.AdamW on one parameter after `step` steps: returns p, m, v
    after step + 1."""
    t = step + 1
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    m_hat = m / (1.0 - beta1 ** t)
    v_hat = v / (1.0 - beta2 ** t)
    p = p - lr * weight_decay * p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p, m, v
