"""Isolated checks: the callable runs in a spawned child process (multiprocessing's "spawn", never
fork: a forked child would inherit the parent's threads' locks and torch's state), which imports
it by name and checks it property by property, sending each row back. A child that dies (a
segfault, an abort, os._exit) or stops answering fails the property it was running, with its
exit signal and the Python traceback faulthandler wrote; a fresh child goes on with the rest."""

import faulthandler
import importlib
import multiprocessing
import os
import signal
import tempfile

from . import _posenc


def target_of(fn):
    """"module:qualname" for an importable function (or fn itself if already such a string)."""
    if isinstance(fn, str):
        return fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ValueError(f"isolated=True needs an importable function (defined at a module's top "
                         f"level, or a 'module:function' string); {fn!r} is not")
    return f"{module}:{qualname}"


def resolve(target):
    module, _, name = target.partition(":")
    if not name:
        raise ValueError(f"{target!r}: expected 'module:function'")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _describe(arguments):
    """The call's arguments as shapes, dtypes and strides (elements), and scalars: never the
    arrays' values, which a bad-input view may not allow reading."""
    parts = []
    for name, value in arguments.items():
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            stride = getattr(value, "stride", None)
            strides = stride() if callable(stride) else [s // value.itemsize
                                                         for s in value.strides]
            dtype = str(value.dtype).replace("torch.", "")
            parts.append(f"{name}={dtype}{list(value.shape)} strides {list(strides)}")
        elif value is not None:
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def _child(conn, family, target, arrays, options, properties, bands, crash_log):
    with open(crash_log, "w") as log:
        faulthandler.enable(log)
        try:
            fn = resolve(target)
        except Exception as e:  # noqa: BLE001 -- reported to the parent as a usage error
            conn.send(("error", f"cannot import {target}: {type(e).__name__}: {e}"))
            return

        def traced(**arguments):  # the log names the call a crash or a hang interrupts
            log.seek(0)
            log.write(f"in the call {_describe(arguments)}\n")
            log.truncate()
            log.flush()
            return fn(**arguments)

        for name in properties:
            options.property = name
            report = _posenc.check(family, traced, arrays, options)
            conn.send(("row", report.results[0]))
        if bands:
            conn.send(("bands", _posenc.error_by_position(family, traced, arrays, options)))
        conn.send(("done", None))


def _traceback(log):
    """faulthandler's report, down to the callable's frames (not posenc's, not multiprocessing's,
    nor the list of extension modules)."""
    here = os.path.dirname(__file__)
    keep = []
    for line in log.splitlines():
        frame = line.strip().startswith("File ")
        if (frame and (here in line or "multiprocessing" in line or '"<string>"' in line)) or \
                line.startswith("Extension modules:") or not line.strip():
            continue
        keep.append(line)
    return "\n".join(keep)


def _death(child, hung_after):
    if hung_after is not None:
        return f"hung: no verdict after {hung_after:g} s, killed"
    if child.exitcode is not None and child.exitcode < 0:
        return f"crashed: killed by {signal.Signals(-child.exitcode).name}"
    return f"crashed: the child process exited with status {child.exitcode}"


def check(family, target, arrays, options, error_by_position=False, timeout=None):
    """The report of a check of `target` run in spawned children; a property whose child died
    is failed with why."""
    selected = _posenc.selected_properties(family, options.property, options.reproduce)
    statements = dict(selected)
    remaining = [name for name, _ in selected]
    report = _posenc.ImplReport()
    report.family, report.impl, report.bound = family, f"{family}/{options.name}", options.bound
    rows = {}
    want_bands = error_by_position and not options.reproduce
    if options.time_budget is not None and remaining:  # shared as posenc validate shares it
        options.time_budget = options.time_budget / len(remaining)
    context = multiprocessing.get_context("spawn")
    while remaining or want_bands:
        with tempfile.NamedTemporaryFile(prefix="posenc-isolated-", suffix=".log") as crash_log:
            receive, send = context.Pipe(duplex=False)
            child = context.Process(
                target=_child, daemon=True,
                args=(send, family, target, arrays, options, remaining, want_bands,
                      crash_log.name))
            child.start()
            send.close()
            hung_after = None
            while True:
                if timeout is not None and not receive.poll(timeout):
                    hung_after = timeout
                    child.kill()
                    break
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    break
                if kind == "error":
                    child.join()
                    raise ImportError(payload)
                if kind == "row":
                    rows[payload.property] = payload
                    remaining.remove(payload.property)
                elif kind == "bands":
                    report.bands, want_bands = payload, False
                elif kind == "done":
                    break
            child.join()
            receive.close()
            if not remaining and not want_bands:
                break
            why = _death(child, hung_after)
            log = _traceback(open(crash_log.name, errors="replace").read())
        if not remaining:  # it died measuring error by position
            want_bands = False
            continue
        row = _posenc.PropertyResult()
        row.property, row.impl, row.status = remaining[0], report.impl, "failed"
        row.statement, row.seed = statements[remaining[0]], options.seed
        row.failure = f"{why} while checking this property (isolated in process {child.pid})"
        if log:
            row.failure += "\n" + log
        rows[remaining.pop(0)] = row
    report.results = [rows[name] for name, _ in selected]
    return report

