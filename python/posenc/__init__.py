"""posenc from Python: the fp64 oracle and the optimized kernels on NumPy arrays and torch
tensors, and the harness that checks your own kernel.

    q_out = posenc.reference.rope(q=q, positions=positions, rotary_dim=64)   # a new array
    posenc.optimized.rope(q=q, q_out=q, positions=positions, rotary_dim=64)  # in place
    result = posenc.check.rope(my_rope, variants=..., bound=2, arrays="torch")
    assert result.passed, result.text

Keyword arguments are the fields of the family's Call struct (include/posenc/<family>.h); enums
are strings ("half_split", "causal"), a rope scaling is a posenc.RopeScaling or a dict of its
fields. Outputs not given are allocated (NumPy or torch like the inputs) and returned: one array,
or a tuple in field order. Bad input raises posenc.Error, a ValueError naming the argument and its
value, before anything is written.
"""

from types import SimpleNamespace

from . import _posenc
from ._posenc import ImplReport, PositionBand, PropertyResult, RopeScaling


class Error(ValueError):
    """Bad input: posenc::Error. `argument` names it ("positions[3]"), `value` is its value."""

    def __init__(self, argument, value, requirement):
        super().__init__(f"invalid argument {argument} = {value}: {requirement}")
        self.argument, self.value, self.requirement = argument, str(value), requirement

    def __reduce__(self):
        return Error, (self.argument, self.value, self.requirement)


_posenc._set_error_class(Error)

families = tuple(_posenc.families)
# Variant bits (posenc/kernel.h and the family headers): posenc.variant.f32 | ...
variant = SimpleNamespace(**_posenc.variant)


def implementations(family):
    """The registry's implementations of `family`, the reference first."""
    return list(_posenc.implementations(family))


from . import _calls  # noqa: E402  (needs Error registered)
from . import check  # noqa: E402

run = _calls.run
reference = SimpleNamespace(**{f: _calls.kernel(f, "reference") for f in families})
optimized = SimpleNamespace(**{f: _calls.kernel(f, "optimized") for f in families})
# posenc's argument checks alone: raise posenc.Error for a call the contract rejects. A checked
# callable can start with posenc.contract.<family>(**arguments) to reject bad input as posenc does.
contract = SimpleNamespace(**{f: _calls.contract(f) for f in families})
validated = _calls.validated

__all__ = ["Error", "ImplReport", "PositionBand", "PropertyResult", "RopeScaling", "check",
           "contract", "families", "implementations", "optimized", "reference", "run",
           "validated", "variant"]
