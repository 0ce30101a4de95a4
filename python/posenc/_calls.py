"""The registry's kernels as Python functions: outputs allocated when not given, then returned."""

import sys

from . import _posenc

_NUMPY_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16"}
_TORCH_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16"}


def _is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, (torch.Tensor, torch.dtype))


def _new(shape, dtype=None, like=None):
    """An uninitialised array of `shape`: torch when `like` or `dtype` is torch's (or bf16, which
    NumPy lacks), else NumPy; dtype a posenc name ("f32", "bf16", ...), a NumPy or torch dtype,
    or else like's."""
    shape = tuple(int(n) for n in shape)
    if dtype is None and like is not None:
        dtype = like.dtype
    dtype = "f32" if dtype is None else dtype
    if _is_torch(like) or _is_torch(dtype) or dtype == "bf16":
        import torch

        if isinstance(dtype, str):
            dtype = getattr(torch, _TORCH_DTYPES[dtype])
        return torch.empty(shape, dtype=dtype)
    import numpy

    return numpy.empty(shape, dtype=_NUMPY_DTYPES.get(dtype, dtype))


def _outputs(family, kw, extra):
    """Allocates the outputs `kw` lacks, from the inputs' shapes (posenc/<family>.h)."""
    dtype = extra.pop("dtype", None)
    g = kw.get

    def rows(name):
        return g(name).shape[0]

    if family == "attention":
        q, v = g("q"), g("v")
        yield "out", lambda: _new((q.shape[0], q.shape[1], v.shape[2]), dtype, like=q)
    elif family == "sinusoidal":
        tokens, d = extra.pop("tokens", None), extra.pop("d", None)
        if g("x") is not None:
            yield "out", lambda: _new(g("x").shape, dtype, like=g("x"))
        else:
            yield "out", lambda: _new((rows("positions") if tokens is None else tokens, d),
                                      dtype or "f32", like=g("positions"))
    elif family == "rope_frequencies":
        half = g("rotary_dim", 0) // 2
        yield "inv_freq", lambda: _new((half,), "f64")
        yield "attention_factor", lambda: _new((1,), "f64")
    elif family == "rope_cache":
        shape = (extra.pop("rows", 0), g("rotary_dim", 0) // 2)
        yield "cos", lambda: _new(shape, dtype)
        yield "sin", lambda: _new(shape, dtype)
    elif family == "alibi":
        shape = lambda: (g("n_heads"), rows("q_positions"), rows("k_positions"))  # noqa: E731
        yield "bias", lambda: _new(shape(), dtype or "f32", like=g("q_positions"))
        if g("slopes") is True:  # slopes=True asks for them
            yield "slopes", lambda: _new((g("n_heads"),), "f32")
    elif family == "t5":
        table = g("table")
        yield "bias", lambda: _new(
            (table.shape[1], rows("q_positions"), rows("k_positions")), dtype, like=table)
    else:  # an output that may be its input's very view has its shape (rope, mrope, absolute, ...)
        for output, source in _posenc.in_place_of(family).items():
            if g(source) is not None:
                yield output, lambda source=source: _new(g(source).shape, dtype, like=g(source))


def _allocate(family, kw, extra):
    """Outputs left out are allocated; one given as None stays absent (k_out=None with a k is
    bad input, not a request for a k_out)."""
    for name, make in _outputs(family, kw, extra):
        if name not in kw or kw[name] is True:
            try:
                kw[name] = make()
            except Exception:  # noqa: BLE001 -- shapes that posenc's validation rejects, by name
                kw.pop(name, None)


def run(family, impl, **kwargs):
    """Runs the registry's implementation `impl` ("rope/optimized", ...) and returns its
    outputs."""
    extra = {k: kwargs.pop(k) for k in ("dtype", "tokens", "d", "rows") if k in kwargs}
    _allocate(family, kwargs, extra)
    if extra:
        raise TypeError(f"{family}() got unexpected keyword arguments {sorted(extra)}")
    _posenc.run(family, impl, kwargs)
    outputs = [kwargs[name] for name, role in _posenc.fields(family)
               if role == "output" and kwargs.get(name) is not None]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def kernel(family, which):
    """posenc.reference.<family> (the registry's entry 0) or posenc.optimized.<family> (its
    "<family>/optimized" dispatcher, Highway's best target on this CPU)."""
    names = _posenc.implementations(family)
    impl = names[0] if which == "reference" else f"{family}/optimized"
    assert impl in names, f"the registry has no {impl}"
    fields = ", ".join(name for name, _ in _posenc.fields(family))

    def call(**kwargs):
        return run(family, impl, **kwargs)

    call.__name__ = call.__qualname__ = family
    call.__doc__ = (f"{impl} on NumPy arrays or torch tensors. Keyword arguments: {fields} "
                    f"(posenc/{family}.h). Outputs not given are allocated and returned.")
    return call


def contract(family):
    def validate(**kwargs):
        _posenc.validate(family, kwargs)

    validate.__name__ = validate.__qualname__ = family
    validate.__doc__ = (f"Raises posenc.Error if posenc's contract rejects this {family} call "
                        "(the same checks every posenc kernel runs before writing anything).")
    return validate


def validated(family):
    """A decorator for a kernel checked by posenc.check: before it runs, its arguments go through
    posenc's contract (posenc.contract.<family>), so that bad input raises posenc.Error naming
    the argument as posenc does, and nothing is written."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def checked(**kwargs):
            _posenc.validate(family, kwargs)
            return fn(**kwargs)

        return checked

    return wrap
