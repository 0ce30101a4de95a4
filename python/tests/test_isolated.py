"""isolated=True: the callable runs in a spawned child process, so a crash fails a property
instead of the test run. (This module imports no torch: each child imports it afresh.)"""

import os

import posenc
from kernels import SINUSOIDAL, hangs, segfaults, segfaults_on_long_tables, table


def test_an_isolated_kernel_gets_the_same_verdict_as_in_process():
    isolated = posenc.check.sinusoidal(table, variants=SINUSOIDAL, cases=30, isolated=True)
    in_process = posenc.check.sinusoidal(table, variants=SINUSOIDAL, cases=30)
    assert isolated.passed, isolated.text
    assert [(r.property, r.status, r.cases, r.worst) for r in isolated.rows] == \
        [(r.property, r.status, r.cases, r.worst) for r in in_process.rows]


def test_a_segfault_fails_the_property_it_hit_and_the_run_goes_on():
    pid = os.getpid()
    result = posenc.check.sinusoidal(segfaults, variants=SINUSOIDAL, cases=5, isolated=True,
                                     property="differential")
    assert os.getpid() == pid  # still here
    assert not result.passed
    row = result.row("differential")
    assert row.failed and row.failure.startswith("crashed: killed by SIGSEGV")
    assert "in segfaults" in row.failure  # faulthandler's traceback of the child
    assert "in the call out=float" in row.failure  # the arguments of the call that crashed
    assert "sinusoidal.differential FAILED for sinusoidal/segfaults" in result.text


def test_after_a_crash_the_other_properties_still_run():
    result = posenc.check.sinusoidal(segfaults_on_long_tables, variants=SINUSOIDAL, cases=30,
                                     isolated=True, property="", seed=7)
    statuses = {r.property.split(".")[1]: r.status for r in result.rows}
    assert statuses["differential"] == "failed" and statuses["threads"] == "skipped"
    assert "crashed: killed by SIGSEGV" in result.row("differential").failure
    assert len(result.rows) == len(posenc.check.properties("sinusoidal"))
    assert all(r.failed for r in result.rows if r.cases == 0 and r.status != "skipped")


def test_a_string_names_the_kernel():
    result = posenc.check.sinusoidal("kernels:table", variants=SINUSOIDAL, cases=10,
                                     isolated=True, property="pe0")
    assert result.passed, result.text


def test_a_hang_past_the_timeout_fails_the_property():
    result = posenc.check.sinusoidal(hangs, variants=SINUSOIDAL, cases=5, isolated=True,
                                     property="layouts", timeout=1)
    assert result.row("layouts").failure.startswith("hung: no verdict after 1 s, killed")
