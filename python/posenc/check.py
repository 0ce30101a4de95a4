"""posenc.check.<family>(fn, ...): your Python kernel through every property `posenc validate`
runs (posenc::check::run, properties/check.h): the differential check against the fp64 reference,
guard bytes, layouts, threads (threaded=True), bad input and the family's mathematics, on
generated problems, shrunk to a minimal counterexample on failure.

`fn` is called with the family's arguments as keywords (the Call struct's field names; absent
optional views are None, enums are strings, a scaling is a posenc.RopeScaling). Its arrays
(NumPy, or torch with arrays="torch") are views onto posenc's arenas, zero-copy, between guard
bytes: fn writes its outputs into them (q_out[...] = ..., q_out.copy_(...)) or returns them (one
array, or a tuple in field order). Keep no reference to them after returning. Bad input must
raise posenc.Error naming the argument as posenc does (posenc.contract.<family>(**arguments)
does exactly that); a ValueError in posenc's words ("invalid argument A = V: R") counts too.

isolated=True runs fn in a spawned child process, so that a crash (a segfault in a C extension)
fails the property it was running instead of killing the test run; fn must then be importable:
a module-level function, or a "module:function" string.
"""

import sys

from . import _isolate, _posenc

_NUMPY_LACKS = _posenc.variant["bf16"]


def _variant_bits(variants, arrays):
    if variants is None:  # everything the arrays can hold
        return _posenc.variant["all"] & ~(_NUMPY_LACKS if arrays == "numpy" else 0)
    if isinstance(variants, int):
        return variants
    if isinstance(variants, str):
        variants = variants.replace(",", "|").split("|")
    bits = 0
    for name in variants:
        name = name.strip()
        if name not in _posenc.variant:
            raise ValueError(f"no variant named {name!r}; posenc.variant has "
                             f"{', '.join(_posenc.variant)}")
        bits |= _posenc.variant[name]
    return bits


class Result:
    """A check's verdict. `passed`: some property ran and none failed. `text`: the per-property
    table, then each failure with its minimal counterexample and the reproduce value that replays
    it. `rows`: one posenc.PropertyResult per property. `report`: the posenc.ImplReport that
    `posenc validate` would print and write."""

    def __init__(self, report, replay):
        self.report = report
        self._replay = replay

    @property
    def passed(self):
        return not self.report.failed and self.report.count("passed") > 0

    @property
    def rows(self):
        return list(self.report.results)

    def row(self, prop):
        """The row of property `prop` ("differential" or "rope.differential")."""
        for r in self.report.results:
            if prop in (r.property, r.property.split(".", 1)[1]):
                return r
        raise KeyError(f"{self.report.impl} ran no property {prop!r}")

    @property
    def failures(self):
        return [r for r in self.report.results if r.failed]

    @property
    def reproduce(self):
        """The first failure's reproduce value (reproduce= replays it), or None."""
        return next((r.reproduce for r in self.failures if r.reproduce), None)

    @property
    def bands(self):
        return list(self.report.bands)

    @property
    def text(self):
        s = _posenc.format_properties(self.report)
        for r in self.failures:
            s += "\n" + _posenc.failure_report(r, self._replay(r)) + "\n"
        if _posenc.cut_short([self.report]):
            s += "\nthe time budget cut the run short: " + _posenc.cut_summary([self.report]) + "\n"
        return s

    def error_by_position(self):
        """Worst error in each band of positions [2^k, 2^(k+1)], against the bound (rope and
        sinusoidal with error_by_position=True)."""
        lines = [f"{self.report.impl}: worst error by position (bound {self.report.bound:g})"]
        for b in self.report.bands:
            lines.append(f"  {b.dtype:<4} [{b.lo:>8}, {b.hi:>8}]  {b.worst:>10.3g}  "
                         f"{'ok' if b.ok else 'FAIL: ' + b.failure.splitlines()[0]}")
        return "\n".join(lines) + "\n"

    def __bool__(self):
        raise TypeError("use result.passed (assert result.passed, result.text)")

    def __repr__(self):
        return f"<posenc.check.Result {self.report.impl}: {self.report.verdict()}>"


def run(family, fn, *, variants=None, bound=1.0, cases=None, seed=None, isolated=False,
        arrays="numpy", name=None, threaded=False, property="", reproduce="", time_budget=None,
        error_by_position=False, timeout=None):
    """Checks `fn` as an implementation of `family`; see the module's doc and posenc.check.rope.

    variants: the variant bits fn handles (an int of posenc.variant bits, or names such as
    "f32|strided|rope_half_split"); default all that the arrays can hold (NumPy has no bf16).
    bound: its stated accuracy in the family's tolerance unit. cases, seed: per property (the CI
    profile's 200 and fixed seed by default, or POSENC_PROFILE / RC_PARAMS). reproduce: a
    failure's reproduce value, replaying that case. error_by_position: also measure worst error
    against position (rope, sinusoidal). timeout: seconds a property may run in isolated mode."""
    if arrays not in ("numpy", "torch"):
        raise ValueError(f'arrays must be "numpy" or "torch", not {arrays!r}')
    if name is None:
        name = getattr(fn, "__name__", None) or str(fn).rpartition(":")[2] or "kernel"
    options = _posenc.options(name, _variant_bits(variants, arrays), float(bound), threaded,
                              cases, seed, property or "", reproduce or "", time_budget)
    if isolated:
        report = _isolate.check(family, _isolate.target_of(fn), arrays, options,
                                error_by_position, timeout)
    else:
        if isinstance(fn, str):
            fn = _isolate.resolve(fn)
        report = _posenc.check(family, fn, arrays, options)
        if error_by_position and not options.reproduce:
            report.bands = _posenc.error_by_position(family, fn, arrays, options)
    fn_name = fn if isinstance(fn, str) else getattr(fn, "__name__", "fn")

    def replay(r):
        return f"posenc.check.{family}({fn_name}, ..., reproduce='{r.reproduce}')"

    return Result(report, replay)


def _family_check(family):
    def check(fn, **options):
        return run(family, fn, **options)

    check.__name__ = check.__qualname__ = family
    check.__doc__ = (f"Checks fn, a {family} kernel, through posenc's {family} properties "
                     f"(posenc/{family}.h); returns a posenc.check.Result. Options: see "
                     "posenc.check.run.")
    return check


def properties(family, prop="", reproduce=""):
    """The (name, statement) of each property a check of `family` runs."""
    return list(_posenc.selected_properties(family, prop, reproduce))


_module = sys.modules[__name__]
for _family in _posenc.families:
    setattr(_module, _family, _family_check(_family))
