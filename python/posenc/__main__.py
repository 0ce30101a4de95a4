"""python3 -m posenc validate --python module:function --family F [...]: `posenc validate` for a
Python kernel. It prints the same per-property table, failures and summary, and writes the same
JSON, JUnit and HTML reports (the C++ writers of properties/report.h). Exit status: 0 every
property passed, 1 a property failed, 2 a usage or import error."""

import argparse
import shlex
import sys
import time

from . import _isolate, _posenc, check


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m posenc",
                                description="posenc's harness for Python kernels")
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check a Python kernel against every property of its "
                       "family")
    v.add_argument("--python", required=True, metavar="MODULE:FUNCTION",
                   help="the kernel: an importable function taking the family's arguments")
    v.add_argument("--family", required=True, choices=_posenc.families)
    v.add_argument("--variants", help="variant bits it handles, e.g. f32|strided|rope_half_split "
                   "(default: all the arrays can hold)")
    v.add_argument("--bound", type=float, default=1.0,
                   help="stated accuracy in the family's tolerance unit (default 1)")
    v.add_argument("--arrays", choices=("numpy", "torch"), default="numpy",
                   help="what the kernel is handed (default numpy)")
    v.add_argument("--threaded", action="store_true", help="it honours `threads`")
    v.add_argument("--property", default="", help="only this property (e.g. differential)")
    v.add_argument("--seed", type=int, help="RapidCheck seed (default: the CI seed)")
    v.add_argument("--cases", type=int, help="cases per property (default 200)")
    v.add_argument("--time-budget", type=float, help="stop generating new cases after this many "
                   "seconds")
    v.add_argument("--reproduce", default="", help="replay the one failing case a report printed")
    v.add_argument("--isolated", action="store_true",
                   help="run the kernel in a spawned child: a crash fails a property, not this")
    v.add_argument("--timeout", type=float,
                   help="with --isolated, seconds a property may run before it counts as hung")
    v.add_argument("--json", help="also write the report as JSON to this file")
    v.add_argument("--junit", help="also write the report as JUnit XML to this file")
    v.add_argument("--html", help="also write an HTML page with worst error against position")
    return p


def _replay(args, r):
    words = ["python3", "-m", "posenc", "validate", "--python", args.python, "--family",
             args.family, "--arrays", args.arrays, "--bound", f"{args.bound:g}"]
    if args.variants:
        words += ["--variants", args.variants]
    if args.threaded:
        words.append("--threaded")
    if args.isolated:
        words.append("--isolated")
    return " ".join(shlex.quote(w) for w in words + ["--reproduce", r.reproduce])


def validate(args):
    if args.reproduce and not _posenc.selected_properties(args.family, args.property,
                                                          args.reproduce):
        print(f"posenc validate: --reproduce '{args.reproduce}' does not decode for "
              f"{args.family}", file=sys.stderr)
        return 2
    if not check.properties(args.family, args.property):
        print(f"posenc validate: no property named '{args.property}' in family {args.family}",
              file=sys.stderr)
        return 2
    try:
        fn = args.python if args.isolated else _isolate.resolve(args.python)
        name = args.python.rpartition(":")[2]
        options = _posenc.options(name, check._variant_bits(args.variants, args.arrays),
                                  args.bound, args.threaded, args.cases, args.seed,
                                  args.property, args.reproduce, args.time_budget)
    except (ImportError, AttributeError, ValueError) as e:
        print(f"posenc validate: {e}", file=sys.stderr)
        return 2
    budget = f", time budget {args.time_budget:g} s" if args.time_budget else ""
    print(f"posenc validate: {options.profile} profile, seed {options.seed}, {options.cases} "
          f"cases per property{budget}{', replaying one case' if args.reproduce else ''}\n",
          flush=True)
    start = time.monotonic()
    bands = bool(args.html or args.json)
    try:
        if args.isolated:
            report = _isolate.check(args.family, fn, args.arrays, options, bands, args.timeout)
        else:
            report = _posenc.check(args.family, fn, args.arrays, options)
            if bands and not args.reproduce:
                report.bands = _posenc.error_by_position(args.family, fn, args.arrays, options)
    except ImportError as e:
        print(f"posenc validate: {e}", file=sys.stderr)
        return 2
    seconds = time.monotonic() - start
    print(_posenc.format_properties(report))
    results = report.results
    for r in results:
        if r.failed:
            r.replay = _replay(args, r)
            print(_posenc.failure_report(r, r.replay) + "\n")
    report.results = results
    print(f"{_posenc.format_summary([report])}1 implementations, {int(report.failed)} failed, "
          f"{seconds:.1f} s")
    if args.time_budget and _posenc.cut_short([report]):
        print(f"the time budget of {args.time_budget:g} s cut the run short: "
              f"{_posenc.cut_summary([report])}")
    for kind, path in (("json", args.json), ("junit", args.junit), ("html", args.html)):
        if path:
            error = _posenc.write_report(kind, path, [report], options.profile, options.seed,
                                         options.cases, args.time_budget, seconds)
            if error:
                print(f"posenc validate: cannot write {path}: {error}", file=sys.stderr)
                return 2
    return 1 if report.failed else 0


def main(argv=None):
    args = _parser().parse_args(argv)
    return validate(args)


if __name__ == "__main__":
    sys.exit(main())
