import numpy as np
import posenc

@posenc.validated("sinusoidal")  # bad input raises posenc.Error naming it, as posenc does
def my_table(out, x, positions, base, **_):
    p = np.arange(len(out)) if positions is None else positions
    omega = np.float32(base) ** (-np.arange(0, out.shape[1], 2, dtype=np.float32) / out.shape[1])
    angle = p[:, None].astype(np.float32) * omega  # the angle p·ω in float32
    pe = np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(out.shape)
    out[...] = pe if x is None else x + pe

def test_my_table():
    result = posenc.check.sinusoidal(my_table, bound=1, variants="f32|strided|in_place|"
                                     "sinusoidal_add|sinusoidal_positions")
    assert result.passed, result.text
