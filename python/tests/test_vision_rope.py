"""vision_rope from Python against the models' own formulas."""

import numpy as np
import pytest

import posenc


def test_vision_rope_is_qwen2_vls_formula_and_llama4s_class_token_stays():
    """Axial half-split as transformers' Qwen2-VL vision tower writes it (VisionRotaryEmbedding
    of head_dim/2, angles cat(row·inv_freq, column·inv_freq)); Llama 4's class token at (−1, −1)
    with offset 1 turns by 0."""
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, (6, 2, 16)).astype(np.float32)
    grid = np.array([[0, 0], [0, 1], [1, 0], [3, 2], [7, 5], [-1, -1]], dtype=np.int64)
    d = 16
    inv_freq = 10000.0 ** (-np.arange(0, d // 2, 2) / (d // 2))
    rows, cols = grid[:5, 0:1].astype(np.float64), grid[:5, 1:2].astype(np.float64)
    angle = np.concatenate([rows * inv_freq, cols * inv_freq], axis=-1)[:, None, :]
    a, b = q[:5, :, : d // 2].astype(np.float64), q[:5, :, d // 2:].astype(np.float64)
    expected = np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                               a * np.sin(angle) + b * np.cos(angle)], axis=-1)
    for kernel in (posenc.reference.vision_rope, posenc.optimized.vision_rope):
        got = kernel(q=q[:5], positions=grid[:5], rotary_dim=d)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
        llama4 = kernel(q=q, positions=grid, rotary_dim=d, convention="axial",
                        axis_order="column_first", position_offset=1, layout="interleaved")
        np.testing.assert_array_equal(llama4[5], q[5])
    with pytest.raises(posenc.Error, match="rotary_dim"):
        posenc.reference.vision_rope(q=q, positions=grid, rotary_dim=6)
