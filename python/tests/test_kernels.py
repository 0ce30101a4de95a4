"""posenc.reference and posenc.optimized on NumPy arrays and torch tensors."""

import numpy as np
import pytest
import torch

import posenc


def rope_inputs(tokens=5, heads=2, head_dim=8, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, (tokens, heads, head_dim)).astype(dtype)
    positions = np.array([0, 3, 17, 1000, 65536][:tokens], dtype=np.int64)
    return q, positions


def half_split_rope(q, positions, base=10000.0):
    """Rope in float64 NumPy, as the formula reads (posenc/rope.h), for comparison."""
    d = q.shape[-1]
    inv_freq = base ** (-np.arange(0, d, 2) / d)
    angle = positions[:, None].astype(np.float64) * inv_freq  # [tokens, d/2]
    c, s = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b = q[..., : d // 2].astype(np.float64), q[..., d // 2:].astype(np.float64)
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)


def test_every_family_has_a_reference_and_an_optimized_kernel():
    # The plugin ABI's numbering: a new family goes last, the first ones never move.
    assert posenc.families[:9] == ("attention", "absolute", "sinusoidal", "rope_frequencies",
                                   "rope_cache", "rope", "alibi", "t5", "mrope")
    assert len(set(posenc.families)) == len(posenc.families)
    for family in posenc.families:
        names = posenc.implementations(family)
        assert names[0] == f"{family}/reference"
        assert f"{family}/optimized" in names
        assert callable(getattr(posenc.reference, family))
        assert callable(getattr(posenc.optimized, family))


def test_reference_rope_is_the_formula_and_optimized_agrees():
    q, positions = rope_inputs()
    expected = half_split_rope(q, positions)
    ref = posenc.reference.rope(q=q, positions=positions, rotary_dim=8)
    assert isinstance(ref, np.ndarray) and ref.dtype == np.float32 and ref.shape == q.shape
    np.testing.assert_allclose(ref, expected, rtol=0, atol=1e-6)
    opt = posenc.optimized.rope(q=q, positions=positions, rotary_dim=8)
    np.testing.assert_allclose(opt, ref, rtol=0, atol=2e-7)


def test_out_is_written_in_place_and_strided_views_are_read_as_views():
    q, positions = rope_inputs()
    wide = np.zeros((5, 2, 16), np.float32)  # q as a strided view: every other element
    wide[..., ::2] = q
    view = wide[..., ::2]
    assert not view.flags.c_contiguous
    expected = posenc.reference.rope(q=q, positions=positions, rotary_dim=8)
    posenc.reference.rope(q=view, q_out=view, positions=positions, rotary_dim=8)  # in place
    np.testing.assert_array_equal(wide[..., ::2], expected)
    np.testing.assert_array_equal(wide[..., 1::2], 0)  # nothing between the elements


def test_torch_tensors_in_bf16_f16_and_permuted_views():
    q, positions = rope_inputs()
    exact = half_split_rope(q, positions)
    for dtype, ulp in ((torch.bfloat16, 2.0**-8), (torch.float16, 2.0**-11)):
        tq = torch.from_numpy(q).to(dtype)
        out = posenc.optimized.rope(q=tq, positions=torch.from_numpy(positions), rotary_dim=8)
        assert isinstance(out, torch.Tensor) and out.dtype == dtype
        exact_of_rounded = half_split_rope(tq.double().numpy(), positions)
        assert np.abs(out.double().numpy() - exact_of_rounded).max() <= ulp  # 1 ulp of |pair| ≤ 1
        assert np.abs(out.double().numpy() - exact).max() < 4 * ulp
    permuted = torch.from_numpy(q).permute(1, 0, 2).contiguous().permute(1, 0, 2)
    assert not permuted.is_contiguous()
    out = posenc.reference.rope(q=permuted, positions=torch.from_numpy(positions), rotary_dim=8)
    np.testing.assert_array_equal(out.numpy(),
                                  posenc.reference.rope(q=q, positions=positions, rotary_dim=8))


def test_numpy_float16():
    q, positions = rope_inputs(dtype=np.float16)
    out = posenc.reference.rope(q=q, positions=positions, rotary_dim=8)
    assert out.dtype == np.float16
    assert np.abs(out - half_split_rope(q, positions)).max() <= 2.0**-11


def test_bad_input_raises_posenc_error_naming_it_and_writes_nothing():
    q, positions = rope_inputs()
    positions[3] = 2**24 + 1
    out = np.full_like(q, 7.0)
    with pytest.raises(posenc.Error) as e:
        posenc.optimized.rope(q=q, q_out=out, positions=positions, rotary_dim=8)
    assert isinstance(e.value, ValueError)
    assert e.value.argument == "positions[3]" and e.value.value == str(2**24 + 1)
    assert str(e.value).startswith("invalid argument positions[3] = 16777217: must lie in")
    np.testing.assert_array_equal(out, 7.0)
    with pytest.raises(posenc.Error, match="rotary_dim = 7"):
        posenc.reference.rope(q=q, positions=positions, rotary_dim=7)
    with pytest.raises(posenc.Error, match="rotary_dim = 1180591620717411303424: is out of range"):
        posenc.reference.rope(q=q, positions=positions, rotary_dim=2**70)
    with pytest.raises(posenc.Error, match="layout = 'diagonal'"):
        posenc.reference.rope(q=q, positions=positions, rotary_dim=8, layout="diagonal")
    with pytest.raises(posenc.Error, match="q = list"):
        posenc.reference.rope(q=q.tolist(), positions=positions, rotary_dim=8)
    with pytest.raises(posenc.Error, match="q = numpy int16"):
        posenc.reference.rope(q=q.astype(np.int16), positions=positions, rotary_dim=8)
    with pytest.raises(posenc.Error, match="q_out = read-only"):
        ro = q.copy()
        ro.flags.writeable = False
        posenc.reference.rope(q=q, q_out=ro, positions=positions, rotary_dim=8)
    with pytest.raises(posenc.Error, match="k_out = absent: k and k_out come together"):
        posenc.reference.rope(q=q, k=q.copy(), k_out=None, positions=np.arange(5), rotary_dim=8)
    q_out, k_out = posenc.reference.rope(q=q, k=q.copy(), positions=np.arange(5), rotary_dim=8)
    np.testing.assert_array_equal(q_out, k_out)  # k_out left out: allocated
    with pytest.raises(TypeError, match="unexpected keyword argument 'rotary'"):
        posenc.reference.rope(q=q, positions=positions, rotary=8)


def test_the_other_families():
    pos = np.arange(6, dtype=np.int64)
    table = posenc.reference.sinusoidal(positions=pos, d=8)
    assert table.shape == (6, 8) and table.dtype == np.float32
    np.testing.assert_allclose(table[:, 0], np.sin(pos), atol=1e-7)
    inv_freq, factor = posenc.reference.rope_frequencies(
        rotary_dim=8, scaling=posenc.RopeScaling(kind="linear", factor=4))
    np.testing.assert_allclose(inv_freq, 10000.0 ** (-np.arange(0, 8, 2) / 8) / 4, rtol=1e-15)
    assert factor[0] == 1.0
    cos, sin = posenc.optimized.rope_cache(rotary_dim=8, rows=6, scaling={"kind": "none"})
    np.testing.assert_allclose(cos[:, 0], np.cos(pos), atol=1e-7)
    bias, slopes = posenc.reference.alibi(n_heads=4, q_positions=pos, k_positions=pos,
                                          slopes=True)
    np.testing.assert_array_equal(slopes, 2.0 ** (-8 * np.arange(1, 5) / 4))
    np.testing.assert_array_equal(bias[1], -slopes[1] * np.abs(pos[:, None] - pos[None, :]))
    t5_table = np.arange(64, dtype=np.float32).reshape(32, 2)
    t5 = posenc.optimized.t5(q_positions=pos, k_positions=pos, table=t5_table)
    assert t5.shape == (2, 6, 6) and t5[0, 0, 0] == t5_table[0, 0]
    q = np.random.default_rng(0).standard_normal((6, 2, 8)).astype(np.float32)
    same = np.repeat(pos[:, None], 3, axis=1)  # p_t = p_h = p_w: 1D rope, bit for bit
    np.testing.assert_array_equal(
        posenc.reference.mrope(q=q, positions=same, rotary_dim=8, mrope_section=(2, 1, 1)),
        posenc.reference.rope(q=q, positions=pos, rotary_dim=8))
    x = np.ones((6, 4), np.float32)
    absolute = posenc.reference.absolute(x=x, table=np.eye(6, 4, dtype=np.float32), positions=pos)
    np.testing.assert_array_equal(absolute, x + np.eye(6, 4))
    q = torch.randn(3, 2, 4)
    out = posenc.optimized.attention(q=q, k=q, v=q, mask="causal")
    assert out.shape == (3, 2, 4)
    np.testing.assert_allclose(out[0].numpy(), q[0].numpy(), atol=1e-6)  # sees only itself

