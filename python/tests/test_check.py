"""posenc.check's bridge: what a callable is handed, what it may return or raise, and that each
generic property still bites through it."""

import numpy as np
import pytest
import torch

import posenc

from kernels import SINUSOIDAL
from kernels import table as numpy_sinusoidal

CASES = 40


def test_a_correct_numpy_kernel_passes_every_property():
    result = posenc.check.sinusoidal(numpy_sinusoidal, variants=SINUSOIDAL, cases=CASES)
    assert result.passed, result.text
    assert [r.property for r in result.rows] == [p for p, _ in posenc.check.properties(
        "sinusoidal")]
    assert result.row("threads").status == "skipped"  # not threaded=True
    assert result.reproduce is None


def test_the_callable_gets_zero_copy_views_with_the_call_struct_field_names():
    seen = []

    def spy(**arguments):
        seen.append({k: (type(v).__name__, getattr(v, "dtype", None)) for k, v in
                     arguments.items()})
        if arguments["x"] is not None and arguments["out"] is arguments["x"]:
            seen[-1]["in place"] = True
        numpy_sinusoidal(**arguments)

    assert posenc.check.sinusoidal(spy, variants=SINUSOIDAL, cases=10).passed
    assert set(seen[0]) >= {"out", "x", "positions", "base", "threads"}
    assert seen[0]["out"][0] == "ndarray" and seen[0]["base"][0] == "float"
    assert any(s.get("in place") for s in seen)  # in place: the same array object, twice
    assert {s["out"][1] for s in seen} == {np.dtype("float32"), np.dtype("float16")}


def test_returned_outputs_are_written_for_the_callable():
    @posenc.validated("sinusoidal")
    def returning(out, x, positions, base, threads):
        fresh = np.empty_like(out)
        numpy_sinusoidal(out=fresh, x=x, positions=positions, base=base, threads=threads)
        return fresh

    result = posenc.check.sinusoidal(returning, variants=SINUSOIDAL, cases=CASES)
    assert result.passed, result.text

    def wrong_dtype(out, **_):
        return np.zeros(out.shape, np.float64)

    result = posenc.check.sinusoidal(wrong_dtype, variants=SINUSOIDAL, cases=5,
                                     property="differential")
    assert "returned out as float64" in result.text


def test_a_write_outside_the_outputs_fails_guard_bytes():
    def scribbles_on_its_input(out, x, **arguments):
        numpy_sinusoidal(out=out, x=x, **arguments)
        if x is not None and x is not out and x.size:
            x.flat[0] = 0.5  # writes into an input: the arena's snapshot sees it

    result = posenc.check.sinusoidal(scribbles_on_its_input, variants=SINUSOIDAL, cases=CASES)
    assert not result.passed and result.row("guard_bytes").failed
    assert "wrote outside its outputs" in result.row("guard_bytes").failure


def test_bad_input_must_be_rejected_naming_the_argument():
    def unchecked(out, x, positions, base, **_):  # no validation: accepts anything
        numpy_sinusoidal.__wrapped__(out=out, x=x, positions=positions, base=base)

    def plain_value_error(**arguments):
        try:
            posenc.contract.sinusoidal(**arguments)
        except posenc.Error as e:
            raise ValueError("bad input") from e
        numpy_sinusoidal(**arguments)

    def posenc_words(**arguments):  # a ValueError in posenc's words counts as posenc.Error
        try:
            posenc.contract.sinusoidal(**arguments)
        except posenc.Error as e:
            raise ValueError(str(e)) from None
        numpy_sinusoidal(**arguments)

    for fn, verdict in ((unchecked, "accepted it"), (plain_value_error, "named '' instead of")):
        result = posenc.check.sinusoidal(fn, variants=SINUSOIDAL, cases=CASES,
                                         property="bad_input")
        assert result.row("bad_input").failed, result.text
        assert verdict in result.row("bad_input").failure
    assert posenc.check.sinusoidal(posenc_words, variants=SINUSOIDAL, cases=CASES,
                                   property="bad_input").passed


def test_an_exception_is_the_call_s_failure_with_where_it_was_raised():
    def broken(**_):
        raise RuntimeError("no kernel here")

    result = posenc.check.sinusoidal(broken, variants=SINUSOIDAL, cases=5, property="layouts")
    assert "threw: RuntimeError: no kernel here (at test_check.py:" in result.text


def test_threaded_kernels_get_the_threads_property():
    def honours_threads(**arguments):
        assert arguments["threads"] >= 0
        numpy_sinusoidal(**arguments)

    result = posenc.check.sinusoidal(honours_threads, variants=SINUSOIDAL, threaded=True,
                                     cases=5, property="threads")
    assert result.passed and result.row("threads").cases > 0


def test_torch_tensors_and_bf16_reach_a_torch_callable():
    dtypes = set()

    @posenc.validated("rope")
    def reference_rope(**arguments):
        dtypes.add(arguments["q"].dtype)
        assert isinstance(arguments["positions"], torch.Tensor)
        posenc.reference.rope(**arguments)

    result = posenc.check.rope(reference_rope, arrays="torch", cases=CASES, bound=0)
    assert result.passed, result.text
    assert dtypes == {torch.float32, torch.bfloat16, torch.float16}


def test_options_are_checked():
    with pytest.raises(ValueError, match="no variant named 'f31'"):
        posenc.check.sinusoidal(numpy_sinusoidal, variants="f31|strided")
    with pytest.raises(ValueError, match='arrays must be "numpy" or "torch"'):
        posenc.check.sinusoidal(numpy_sinusoidal, arrays="jax")
    with pytest.raises(ValueError, match="importable function"):
        posenc.check.sinusoidal(lambda **_: None, isolated=True)
    with pytest.raises(TypeError, match="result.passed"):
        bool(posenc.check.sinusoidal(numpy_sinusoidal, variants=SINUSOIDAL, cases=1))


@pytest.mark.parametrize("family", posenc.families)
def test_every_family_s_reference_passes_through_the_bridge(family):
    """The registry's reference, called from Python on the arrays posenc hands it, holds every
    property at bound 0: the bridge loses no field, view, dtype or bad input."""
    reference = getattr(posenc.reference, family)

    def through_python(**arguments):
        reference(**arguments)

    result = posenc.check.run(family, through_python, arrays="torch", bound=0, cases=15,
                              threaded=True)
    assert result.passed, result.text
    assert result.row("bad_input").status == "passed"


def test_ctrl_c_in_the_callable_stops_the_check():
    calls = []

    def interrupted(**_):
        calls.append(1)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        posenc.check.sinusoidal(interrupted, variants=SINUSOIDAL, cases=CASES)
    assert len(calls) == 1  # no further call once interrupted
