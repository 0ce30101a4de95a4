"""`posenc config --json` on every corpus config and case agrees with golden.py's frequencies and
attention factor within 4 ulp (the bound and its reason: config/corpus_test.cc).

usage: check_cli.py <posenc binary> <config/models>"""
import glob
import json
import math
import os
import subprocess
import sys

ULPS = 4


def ulps(got, want):
    return abs(got - want) / (math.nextafter(want, math.inf) - want)


def main(posenc, models):
    checked, worst = 0, 0.0
    for golden_path in sorted(glob.glob(os.path.join(models, "*.golden.json"))):
        with open(golden_path) as f:
            golden = json.load(f)
        for case in golden["cases"]:
            command = [posenc, "config", os.path.join(models, golden["config"]), "--json",
                       "--seq-len", str(case["seq_len"])]
            if case["layer"] is not None:
                command += ["--layer", str(case["layer"])]
            out = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
            where = " ".join(command[2:])
            assert out["rotary_dim"] == case["rotary_dim"], where
            assert len(out["inv_freq"]) == len(case["inv_freq"]), where
            for got, want in zip(out["inv_freq"] + [out["attention_factor"]],
                                 case["inv_freq"] + [case["attention_factor"]]):
                worst = max(worst, ulps(got, want))
                assert ulps(got, want) <= ULPS, f"{where}: {got} vs golden {want}"
            checked += 1
    assert checked >= 13, f"only {checked} cases in {models}"
    print(f"{checked} cases, worst {worst:g} ulp (bound {ULPS})")


if __name__ == "__main__":
    main(*sys.argv[1:])
