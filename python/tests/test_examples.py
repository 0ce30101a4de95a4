"""Python kernels as their authors write them, checked by posenc.check: a Hugging Face-style
rotate_half RoPE and a torch.complex RoPE in torch, an ALiBi slope function in NumPy, and a wrong
one (interleaved pairs in a half-split kernel). Their verdicts are asserted."""

import numpy as np
import torch

import posenc

CASES = 60  # per property: the whole file runs in seconds
V = posenc.variant
ROPE = (V.f32 | V.strided | V.in_place | V.rope_partial | V.rope_key | V.rope_inverse |
        V.rope_cached | V.all_scalings)


def frequencies(rotary_dim, base, scaling):
    """ω and the attention factor, as transformers' rope_init_fn returns them (inv_freq,
    attention_scaling), here from posenc's fp64 reference of ROPE_INIT_FUNCTIONS."""
    inv_freq, factor = posenc.reference.rope_frequencies(rotary_dim=rotary_dim, base=base,
                                                         scaling=scaling)
    return torch.from_numpy(inv_freq), float(factor[0])


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


@posenc.validated("rope")  # rejects bad input as posenc does, before anything is written
def hf_rope(q, q_out, k, k_out, positions, rotary_dim, inverse, base, scaling, cos, sin, **_):
    """transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb: angles p·ω formed in float32."""
    if cos is None:
        inv_freq, attention_scaling = frequencies(rotary_dim, base, scaling)
        freqs = positions[:, None].float() * inv_freq.float()[None, :]
        c, s = freqs.cos() * attention_scaling, freqs.sin() * attention_scaling
    else:  # a cos/sin cache, [rows, rotary_dim / 2]
        c, s = cos[positions.long()].float(), sin[positions.long()].float()
    s = -s if inverse else s
    c, s = torch.cat((c, c), dim=-1)[:, None, :], torch.cat((s, s), dim=-1)[:, None, :]
    for x, out in ((q, q_out), (k, k_out)):
        if x is not None:
            rot = x[..., :rotary_dim]
            out[..., :rotary_dim] = rot * c + rotate_half(rot) * s
            out[..., rotary_dim:] = x[..., rotary_dim:]


@posenc.validated("rope")
def complex_rope(q, q_out, k, k_out, positions, rotary_dim, inverse, base, scaling, cos, sin,
                 **_):
    """Meta's Llama apply_rotary_emb (torch.polar, view_as_complex): interleaved pairs, with the
    angles in float64 and the complex product in complex64."""
    if cos is None:
        inv_freq, attention_scaling = frequencies(rotary_dim, base, scaling)
        angles = positions[:, None].double() * inv_freq
        cis = torch.polar(torch.full_like(angles, attention_scaling), angles)
    else:
        cis = torch.complex(cos[positions.long()].double(), sin[positions.long()].double())
    cis = (cis.conj() if inverse else cis).to(torch.complex64)[:, None, :]
    for x, out in ((q, q_out), (k, k_out)):
        if x is not None:
            pairs = x[..., :rotary_dim].float().reshape(*x.shape[:-1], rotary_dim // 2, 2)
            rotated = torch.view_as_real(torch.view_as_complex(pairs.contiguous()) * cis)
            out[..., :rotary_dim] = rotated.flatten(-2).to(x.dtype)  # one rounding to bf16/f16
            out[..., rotary_dim:] = x[..., rotary_dim:]


@posenc.validated("alibi")
def numpy_alibi(n_heads, max_bias, causal, q_positions, k_positions, bias, slopes, **_):
    """Press et al.'s slopes (ggml's form for a head count that is not a power of two)."""
    c = 2 ** int(np.floor(np.log2(n_heads)))
    h = np.arange(n_heads)
    m = np.where(h < c, 2.0 ** (-max_bias * (h + 1) / c),
                 2.0 ** (-(max_bias / 2) * (2 * (h - c) + 1) / c))
    distance = q_positions[:, None].astype(np.float64) - k_positions[None, :]
    if causal:
        b = np.where(distance >= 0, -m[:, None, None] * distance, -np.inf)
    else:
        b = -m[:, None, None] * np.abs(distance)
    with np.errstate(over="ignore"):  # past float16's 65504 it is −∞, as posenc rounds
        bias[...] = b + 0.0  # +0, not −0, where the positions are equal
    if slopes is not None:
        slopes[...] = m


# The bug: pairs (2i, 2i+1) rotated in a kernel that declares the half-split layout.
wrong_pairs_rope = complex_rope


def test_hf_rotate_half_rope_holds_only_at_a_bound_that_admits_any_output_and_is_told_so():
    # Its float32 angle p·ω is off by up to ulp(p·ω)/2: at p = 2^24 a whole radian. Bound 2^24
    # holds every property, but 2^23 f32 units allow an error as large as the output itself.
    result = posenc.check.rope(hf_rope, variants=ROPE | V.rope_half_split, bound=2**24,
                               arrays="torch", cases=CASES, error_by_position=True)
    print(result.text, result.error_by_position(), sep="\n")
    assert not result.passed and " FAILED for " not in result.text, result.text
    assert "FAIL: meaningless bound (f32 bound" in result.report.verdict()
    f32 = [b for b in result.bands if b.dtype == "f32"]
    bands = {b.lo: b.worst for b in f32}
    assert len(bands) == 25 and all(b.ok for b in f32)
    assert bands[0] <= 1 and bands[2**10] > 16 and bands[2**23] > 2**18  # the drift, by position
    # At the default bound of 1 ulp it fails, and says where.
    strict = posenc.check.rope(hf_rope, variants=ROPE | V.rope_half_split, arrays="torch",
                               cases=CASES, property="differential")
    assert not strict.passed and strict.row("differential").failed
    assert "rope.differential FAILED for rope/hf_rope" in strict.text


# The complex64 product of rounded c, s: |error| ≤ (|a|·|c| + |b|·|s|)·2u + |out|·u
# ≤ (2√2 + 1)·u·f‖(a, b)‖ with u = 2⁻²⁴, under 3.83 ulp_f32(f‖(a, b)‖). (It measures 2.)
COMPLEX_BOUND = 4


def test_torch_complex_rope_passes_in_f32_bf16_and_f16():
    result = posenc.check.rope(complex_rope, arrays="torch", bound=COMPLEX_BOUND, cases=CASES,
                               variants=ROPE | V.bf16 | V.f16 | V.rope_interleaved)
    assert result.passed, result.text
    assert result.row("differential").cases > 0 and result.row("pair_norm").status == "passed"


def test_numpy_alibi_slopes_pass_in_f32_and_numpy_float16():
    result = posenc.check.alibi(numpy_alibi, bound=1, cases=CASES,
                                variants=V.f32 | V.f16 | V.strided | V.alibi_causal |
                                V.alibi_slopes)
    assert result.passed, result.text
    assert result.row("bad_input").status == "passed"


def test_interleaved_pairs_in_a_half_split_kernel_fail_the_differential_check():
    result = posenc.check.rope(wrong_pairs_rope, arrays="torch", bound=COMPLEX_BOUND, cases=CASES,
                               variants=ROPE | V.rope_half_split)
    assert not result.passed
    assert result.row("differential").failed
    assert "rope.differential FAILED for rope/complex_rope" in result.text
    assert "half_split" in result.row("differential").failure  # the counterexample's layout
    # Its reproduce value replays that one case, which fails again.
    replay = posenc.check.rope(wrong_pairs_rope, arrays="torch", bound=COMPLEX_BOUND,
                               variants=ROPE | V.rope_half_split,
                               reproduce=result.row("differential").reproduce)
    assert [r.property for r in replay.rows] == ["rope.differential"]
    assert not replay.passed and replay.row("differential").cases == 1
