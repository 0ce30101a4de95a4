#!/usr/bin/python3
"""Golden rotary frequencies for the configs in this directory, written from the public formulas of
Hugging Face transformers' modeling_rope_utils.py (_compute_*_parameters and the config
standardization that feeds them), in Python floats (fp64) and the math module only: nothing here
reads posenc's code. Run it to regenerate <name>.golden.json next to each <name>.json:

    /usr/bin/python3 config/models/golden.py

transformers computes in float32 tensors; these are the same formulas in fp64, the precision of
posenc's oracle.
"""
import glob
import json
import math
import os

# The cases each config is checked at: a layer (models whose layers differ) and the sequence length
# (LongRoPE switches to its long factors past original_max_position_embeddings).
CASES = {
    "gemma-3-4b-it": [{"layer": 0}, {"layer": 5}],
    "phi-3-mini-128k-instruct": [{"seq_len": 0}, {"seq_len": 131072}],
}


def rope(cfg, layer, seq_len):
    text = cfg.get("text_config") or cfg
    params = dict(text.get("rope_parameters") or text.get("rope_scaling") or {})
    theta = text.get("rope_theta", 10000.0)
    if "rope_local_base_freq" in text:
        # Gemma 3: every sliding_window_pattern-th layer is global (the configured scaling and
        # rope_theta); the others are sliding, unscaled, at rope_local_base_freq.
        if (layer + 1) % text.get("sliding_window_pattern", 6):
            params, theta = {"rope_type": "default"}, text["rope_local_base_freq"]
    kind = params.get("rope_type", params.get("type", "default"))
    kind = "default" if kind == "mrope" else kind  # Qwen2-VL's legacy name for default
    theta = params.get("rope_theta", theta)
    head_dim = (text.get("qk_rope_head_dim") or text.get("head_dim")
                or text["hidden_size"] // text["num_attention_heads"])
    d = int(head_dim * params.get("partial_rotary_factor", text.get("partial_rotary_factor", 1.0)))
    L = text.get("max_position_embeddings")
    L0 = (text.get("original_max_position_embeddings")
          or params.get("original_max_position_embeddings") or L)
    pos_freqs = [theta ** ((2 * i) / d) for i in range(d // 2)]
    inv_freq = [1.0 / p for p in pos_freqs]
    attention_factor = 1.0

    if kind == "linear":
        inv_freq = [w / params["factor"] for w in inv_freq]
    elif kind == "yarn":
        factor = params.get("factor") or L / L0

        def mscale(m):
            return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0

        attention_factor = params.get("attention_factor")
        if attention_factor is None:
            m, m_all = params.get("mscale"), params.get("mscale_all_dim")
            attention_factor = mscale(m) / mscale(m_all) if m and m_all else mscale(1)
        beta_fast = params.get("beta_fast") or 32
        beta_slow = params.get("beta_slow") or 1

        def correction_dim(rotations):
            return (d * math.log(L0 / (rotations * 2 * math.pi))) / (2 * math.log(theta))

        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if params.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        if low == high:
            high += 0.001
        inv_freq = []
        for i, p in enumerate(pos_freqs):
            extrapolation = 1 - min(max((i - low) / (high - low), 0.0), 1.0)
            inv_freq.append(1.0 / (factor * p) * (1 - extrapolation) + 1.0 / p * extrapolation)
    elif kind == "longrope":
        factor = params.get("factor") or L / L0
        attention_factor = params.get("attention_factor")
        if attention_factor is None:
            attention_factor = (1.0 if factor <= 1.0 else
                                math.sqrt(1 + math.log(factor) / math.log(L0)))
        ext = params["long_factor"] if seq_len and seq_len > L0 else params["short_factor"]
        inv_freq = [1.0 / (e * p) for e, p in zip(ext, pos_freqs)]
    elif kind == "llama3":
        factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
        low_wavelen, high_wavelen = L0 / low, L0 / high
        scaled = []
        for w in inv_freq:
            wavelen = 2 * math.pi / w
            if wavelen < high_wavelen:
                scaled.append(w)
            elif wavelen > low_wavelen:
                scaled.append(w / factor)
            else:
                smooth = (L0 / wavelen - low) / (high - low)
                scaled.append((1 - smooth) * w / factor + smooth * w)
        inv_freq = scaled
    elif kind != "default":
        raise ValueError(f"no golden formula for rope_type {kind}")
    return {"rotary_dim": d, "base": theta, "inv_freq": inv_freq,
            "attention_factor": attention_factor}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "*.json"))):
        if path.endswith(".golden.json"):
            continue
        name = os.path.basename(path)[:-len(".json")]
        with open(path) as f:
            cfg = json.load(f)
        cases = []
        for case in CASES.get(name, [{}]):
            layer, seq_len = case.get("layer"), case.get("seq_len", 0)
            cases.append({"layer": layer, "seq_len": seq_len,
                          **rope(cfg, layer or 0, seq_len)})
        with open(os.path.join(here, name + ".golden.json"), "w") as f:
            json.dump({"config": name + ".json", "generator": "golden.py", "cases": cases}, f,
                      indent=1)
            f.write("\n")
        print(name, [(c["rotary_dim"], c["attention_factor"]) for c in cases])


if __name__ == "__main__":
    main()
