"""python3 -m posenc validate: posenc validate's output and report files for a Python kernel."""

import html.parser
import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(__file__)
SINUSOIDAL = "f32|f16|strided|in_place|sinusoidal_add|sinusoidal_positions"


def validate(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE] + sys.path))
    return subprocess.run([sys.executable, "-m", "posenc", "validate", *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=HERE)


def test_a_passing_kernel_exits_0_with_validate_s_table():
    run = validate("--python", "kernels:table", "--family", "sinusoidal", "--variants",
                   SINUSOIDAL, "--cases", "20")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("posenc validate: ci profile, seed 1592598564, 20 cases")
    assert re.search(r"sinusoidal\.differential +\d+ +[0-9.e+-]+ / 1 +pass\n", run.stdout)
    assert re.search(r"sinusoidal/table +9 +0 +1 +\d+ .* pass\n1 implementations, 0 failed",
                     run.stdout)


def test_a_failing_kernel_exits_1_writes_the_reports_and_its_replay_line_replays(tmp_path):
    reports = tmp_path / "reports"
    run = validate("--python", "kernels:off_by_one", "--family", "sinusoidal", "--variants",
                   SINUSOIDAL, "--cases", "20", "--json", f"{reports}.json", "--junit",
                   f"{reports}.xml", "--html", f"{reports}.html")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "sinusoidal.differential FAILED for sinusoidal/off_by_one" in run.stdout
    report = json.load(open(f"{reports}.json"))
    (impl,) = report["implementations"]
    assert impl["impl"] == "sinusoidal/off_by_one" and impl["verdict"] == "FAIL"
    # 25 bands [0, 1] ... [2^23, 2^24] per declared dtype: f32 and f16
    assert [b["dtype"] for b in impl["error_by_position"]] == ["f32"] * 25 + ["f16"] * 25
    failed = [p for p in impl["properties"] if p["status"] == "failed"]
    assert failed and all("--reproduce" in p["replay"] for p in failed)
    root = ET.parse(f"{reports}.xml").getroot()
    assert int(root.get("failures")) == len(failed)
    parser = html.parser.HTMLParser()
    parser.feed(open(f"{reports}.html").read())
    assert "<svg" in open(f"{reports}.html").read()

    replay = re.search(r"replay: (python3 -m posenc validate .*)", run.stdout).group(1)
    words = shlex.split(replay)
    assert words[:4] == ["python3", "-m", "posenc", "validate"]
    again = validate(*words[4:])
    assert again.returncode == 1 and "replaying one case" in again.stdout
    assert re.search(r"FAILED for sinusoidal/off_by_one on case 1 ", again.stdout)


def test_usage_errors_exit_2():
    assert validate("--python", "no_such_module:fn", "--family", "rope").returncode == 2
    assert validate("--python", "kernels:off_by_one", "--family", "nope").returncode == 2
    bad = validate("--python", "kernels:off_by_one", "--family", "sinusoidal", "--property",
                   "pair_norm")
    assert bad.returncode == 2 and "no property named 'pair_norm'" in bad.stderr


def test_the_readme_example_is_in_the_readme_and_fails_as_it_shows():
    example = open(os.path.join(HERE, "readme_example.py")).read()
    readme = open(os.path.join(HERE, "..", "..", "README.md")).read()
    assert example in readme
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "readme_example.py"], env=env, capture_output=True, text=True,
                         timeout=300, cwd=HERE)
    assert run.returncode == 1, run.stdout + run.stderr
    for line in ("sinusoidal.differential FAILED for sinusoidal/my_table on case 6",
                 "minimal counterexample:", "FAILED readme_example.py::test_my_table"):
        assert line in run.stdout


def test_isolated_reports_a_crash_as_a_failure_and_exits_1(tmp_path):
    run = validate("--python", "kernels:segfaults", "--family", "sinusoidal", "--variants",
                   SINUSOIDAL, "--property", "differential", "--isolated", "--junit",
                   f"{tmp_path}/r.xml")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "crashed: killed by SIGSEGV while checking this property" in run.stdout
    failure = ET.parse(f"{tmp_path}/r.xml").getroot().find("testsuite/testcase/failure")
    assert "killed by SIGSEGV" in failure.get("message") + (failure.text or "")
