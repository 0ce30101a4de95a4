"""NumPy kernels the tests share; no torch here, so that a spawned child imports this quickly."""

import ctypes
import time

import numpy as np

import posenc

V = posenc.variant
SINUSOIDAL = V.f32 | V.f16 | V.strided | V.in_place | V.sinusoidal_add | V.sinusoidal_positions


def sinusoidal_table(out, x, positions, base, shift=0):
    """PE[p + shift] (posenc/sinusoidal.h) in float64, rounded once to out's dtype."""
    tokens, d = out.shape
    p = (np.arange(tokens) if positions is None else positions.astype(np.float64)) + shift
    angle = p[:, None] * base ** (-np.arange(0, d, 2) / d)
    pe = np.empty((tokens, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    out[...] = pe if x is None else x + pe


@posenc.validated("sinusoidal")  # rejects bad input as posenc does, before anything is written
def table(out, x, positions, base, **_):
    sinusoidal_table(out, x, positions, base)


@posenc.validated("sinusoidal")
def off_by_one(out, x, positions, base, **_):
    """The bug: PE[p + 1] where PE[p] was asked for."""
    sinusoidal_table(out, x, positions, base, shift=1)


def segfaults(**_):
    ctypes.string_at(0)  # reads address 0: SIGSEGV, as a broken C extension would


@posenc.validated("sinusoidal")
def segfaults_on_long_tables(out, **arguments):
    if out.shape[0] > 3:
        ctypes.string_at(0)
    table(out=out, **arguments)


def hangs(**_):
    time.sleep(600)
