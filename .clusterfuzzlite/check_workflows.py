#!/usr/bin/python3
"""Checks that the ClusterFuzzLite workflows (.github/workflows/cflite_*.yml) and the build files
(.clusterfuzzlite/) agree: each workflow checks out the tree, builds with build_fuzzers@v1, then
runs run_fuzzers@v1 in its mode, for the sanitizers and language of project.yaml, with its
fuzz-seconds and, for the scheduled ones, a schedule; and every target build.sh builds has the
corpus and dictionary it copies.

  check_workflows.py <source dir>                  exit 1 listing every problem found
  check_workflows.py <source dir> --broken <cases> each case (a YAML list) breaks one file of the
                                                   tree; exit 1 unless every case is rejected
                                                   with the error it names
Runs under Debian's /usr/bin/python3 with python3-yaml (the Makefile's PACKAGES)."""

import os
import re
import sys

import yaml

PR, BATCH, CRON = (".github/workflows/cflite_" + n + ".yml" for n in ("pr", "batch", "cron"))
PROJECT, DOCKERFILE, BUILD = (
    ".clusterfuzzlite/" + n for n in ("project.yaml", "Dockerfile", "build.sh"))
CMAKELISTS = "CMakeLists.txt"
BUILD_ACTION = "google/clusterfuzzlite/actions/build_fuzzers@v1"
RUN_ACTION = "google/clusterfuzzlite/actions/run_fuzzers@v1"
HOSTED_JOB_LIMIT_MINUTES = 360  # GitHub ends a job on a hosted runner after 6 hours
BUILD_MARGIN_SECONDS = 3600  # what a batch job keeps besides fuzzing: build, corpus transfers
MIN_BATCH_SECONDS = 3600  # batch fuzzing is the long campaign: hours, not minutes
TARGET_GLOB = '"$src"/fuzz/*_fuzz.cc'  # how build.sh finds its targets


def load(root):
    """The files checked, relative path -> text; under fuzz/, every file (the checks need names)."""
    files = {}
    for path in (PR, BATCH, CRON, PROJECT, DOCKERFILE, BUILD, CMAKELISTS):
        full = os.path.join(root, path)
        if os.path.exists(full):
            with open(full, encoding="utf-8") as f:
                files[path] = f.read()
    for dirpath, _, names in os.walk(os.path.join(root, "fuzz")):
        for name in names:
            files[os.path.relpath(os.path.join(dirpath, name), root)] = ""
    return files


def sanitizer_values(value, job, workflow):
    """The sanitizers a step's `sanitizer:` can take: a literal, ${{ matrix.sanitizer }}, an env
    variable of the job or workflow, or an expression (its quoted sanitizer names)."""
    value = str(value if value is not None else "address")  # the actions' default
    expression = re.fullmatch(r"\$\{\{\s*(.*?)\s*\}\}", value, re.DOTALL)
    if not expression:
        return {value}
    inner = expression.group(1)
    if inner == "matrix.sanitizer":
        return set((job.get("strategy") or {}).get("matrix", {}).get("sanitizer") or [])
    env = re.fullmatch(r"env\.(\w+)", inner)
    if env:
        defined = {**(workflow.get("env") or {}), **(job.get("env") or {})}
        if env.group(1) not in defined:
            return set()
        return sanitizer_values(defined[env.group(1)], job, workflow)
    known = {"address", "undefined", "memory", "coverage"}
    return set(re.findall(r"'([^']*)'", inner)) & known


def check_job(path, name, job, workflow, project, mode, errors):
    """One job running ClusterFuzzLite: checkout, build, run, in that order and agreeing."""
    where = f"{os.path.basename(path)}: job {name}"
    steps = job.get("steps") or []
    uses = [str(step.get("uses", "")) for step in steps]
    index = {action: uses.index(action) for action in (BUILD_ACTION, RUN_ACTION) if action in uses}
    if len(index) < 2:
        errors.append(f"{where}: needs steps using {BUILD_ACTION} and then {RUN_ACTION}")
        return
    build, run = (steps[index[a]].get("with") or {} for a in (BUILD_ACTION, RUN_ACTION))
    if index[RUN_ACTION] < index[BUILD_ACTION]:
        errors.append(f"{where}: run_fuzzers must come after build_fuzzers")
    if not any(u.startswith("actions/checkout@") for u in uses[: index[BUILD_ACTION]]):
        errors.append(f"{where}: no actions/checkout before build_fuzzers (ClusterFuzzLite reads "
                      "base_os_version from the checked-out .clusterfuzzlite/project.yaml)")
    if run.get("mode") != mode:
        errors.append(f"{where}: run_fuzzers mode is {run.get('mode')!r}, expected {mode!r}")
    for step, inputs in (("build_fuzzers", build), ("run_fuzzers", run)):
        language = inputs.get("language", "c++")  # the actions' default
        if language != project.get("language"):
            errors.append(f"{where}: {step} language {language!r}, but project.yaml says "
                          f"{project.get('language')!r}")
    if build.get("sanitizer") != run.get("sanitizer"):
        errors.append(f"{where}: build_fuzzers sanitizer {build.get('sanitizer')!r} differs "
                      f"from run_fuzzers sanitizer {run.get('sanitizer')!r}")
    sanitizers = sanitizer_values(run.get("sanitizer"), job, workflow)
    listed = set(project.get("sanitizers") or [])
    if mode == "coverage":
        if sanitizers != {"coverage"}:
            errors.append(f"{where}: coverage mode needs sanitizer coverage, not "
                          f"{sorted(sanitizers)}")
    elif mode in ("code-change", "batch") and sanitizers != listed:
        errors.append(f"{where}: fuzzes with sanitizers {sorted(sanitizers)}, but project.yaml "
                      f"lists {sorted(listed)}")
    elif not sanitizers <= listed:
        errors.append(f"{where}: sanitizers {sorted(sanitizers - listed)} not in project.yaml")
    if "github-token" not in run:
        errors.append(f"{where}: run_fuzzers needs github-token")
    seconds = run.get("fuzz-seconds")
    if not isinstance(seconds, int) or seconds <= 0:
        errors.append(f"{where}: fuzz-seconds must be a positive number of seconds, "
                      f"not {seconds!r}")
        return
    timeout = job.get("timeout-minutes")
    if not isinstance(timeout, int) or timeout > HOSTED_JOB_LIMIT_MINUTES:
        errors.append(f"{where}: timeout-minutes must be set, at most {HOSTED_JOB_LIMIT_MINUTES}")
    elif mode == "batch" and seconds + BUILD_MARGIN_SECONDS > timeout * 60:
        errors.append(f"{where}: fuzz-seconds {seconds} leaves less than {BUILD_MARGIN_SECONDS} s "
                      f"of its {timeout}-minute timeout for the build")
    if mode == "batch" and seconds < MIN_BATCH_SECONDS:
        errors.append(f"{where}: batch fuzz-seconds {seconds} is under {MIN_BATCH_SECONDS}")


def check_workflow(path, files, project, modes, errors):
    """A workflow whose ClusterFuzzLite jobs run `modes` (one job each)."""
    name = os.path.basename(path)
    if path not in files:
        errors.append(f"{name}: missing")
        return
    try:
        workflow = yaml.safe_load(files[path])
    except yaml.YAMLError as error:
        errors.append(f"{name}: not valid YAML: {error}".replace("\n", " "))
        return
    if not isinstance(workflow, dict) or not isinstance(workflow.get("jobs"), dict):
        errors.append(f"{name}: not a workflow (no jobs)")
        return
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    if isinstance(triggers, (str, list)):  # `on: push` or `on: [push, pull_request]`
        triggers = {t: None for t in ([triggers] if isinstance(triggers, str) else triggers)}
    triggers = triggers or {}
    permissions = workflow.get("permissions")
    if not (permissions == "read-all" or isinstance(permissions, dict) and
            all(v in ("read", "none") for v in permissions.values())):
        errors.append(f"{name}: permissions must be read-only, not {permissions!r}")
    if modes == ["code-change"]:
        if "pull_request" not in triggers:
            errors.append(f"{name}: code-change fuzzing must run on pull_request")
    else:
        crons = [entry.get("cron", "") for entry in triggers.get("schedule") or []]
        if not crons:
            errors.append(f"{name}: {'/'.join(modes)} needs a schedule")
        for cron in crons:
            if len(str(cron).split()) != 5:
                errors.append(f"{name}: schedule {cron!r} is not a five-field cron")
        # A schedule an expression selects (e.g. the batch sanitizer) must be one that runs.
        for cron in re.findall(r"github\.event\.schedule\s*==\s*'([^']*)'", files[path]):
            if cron not in crons:
                errors.append(f"{name}: selects on schedule {cron!r}, which is not in on.schedule")
    remaining = list(modes)  # each job is checked against its own mode, else the next unseen
    for job_name, job in workflow["jobs"].items():
        steps = (job or {}).get("steps") or []
        if not any(str(s.get("uses", "")) in (BUILD_ACTION, RUN_ACTION) for s in steps):
            continue
        run = next((s for s in steps if str(s.get("uses", "")) == RUN_ACTION), {})
        mode = (run.get("with") or {}).get("mode")
        expected = mode if mode in remaining else remaining[0] if remaining else mode
        check_job(path, job_name, job, workflow, project, expected, errors)
        if expected in remaining:
            remaining.remove(expected)
    for mode in remaining:
        errors.append(f"{name}: no job runs run_fuzzers in mode {mode!r}")


def check(files):
    """Every problem found in `files` (see load), as messages naming the file."""
    errors = []
    try:
        project = yaml.safe_load(files.get(PROJECT, "")) or {}
    except yaml.YAMLError as error:
        errors.append(f"project.yaml: not valid YAML: {error}".replace("\n", " "))
        project = {}
    if project.get("language") != "c++":
        errors.append(f"project.yaml: language is {project.get('language')!r}, expected 'c++'")
    if not project.get("sanitizers"):
        errors.append("project.yaml: lists no sanitizers")
    base = re.search(r"^FROM gcr\.io/oss-fuzz-base/base-builder(?::(\S+))?",
                     files.get(DOCKERFILE, ""), re.MULTILINE)
    if not base:
        errors.append("Dockerfile: not FROM gcr.io/oss-fuzz-base/base-builder")
    elif (base.group(1) or "legacy") != project.get("base_os_version", "legacy"):
        errors.append(f"Dockerfile: builds on base-builder:{base.group(1)}, but project.yaml's "
                      f"base_os_version (the runner's OS) is {project.get('base_os_version')!r}")
    if "COPY .clusterfuzzlite/build.sh $SRC/" not in files.get(DOCKERFILE, ""):
        errors.append("Dockerfile: does not copy .clusterfuzzlite/build.sh to $SRC/")
    # The packages the fuzz build requires: the posenc_require calls before `if(NOT POSENC_FUZZ)`.
    fuzz_build = files.get(CMAKELISTS, "").split("if(NOT POSENC_FUZZ)")[0]
    for package in re.findall(r'posenc_require\(\w+ "([^"]+)"\)', fuzz_build):
        if package != "libc6-dev" and not re.search(rf"\s{re.escape(package)}\b",
                                                    files.get(DOCKERFILE, "")):
            errors.append(f"Dockerfile: does not install {package}, which the fuzz build needs")

    check_workflow(PR, files, project, ["code-change"], errors)
    check_workflow(BATCH, files, project, ["batch"], errors)
    check_workflow(CRON, files, project, ["prune", "coverage"], errors)

    # build.sh builds fuzz/<family>_fuzz.cc and copies its corpus (zipped) and dictionary.
    if TARGET_GLOB not in files.get(BUILD, ""):
        errors.append(f"build.sh: does not find its targets as {TARGET_GLOB}")
    targets = sorted(p for p in files if re.fullmatch(r"fuzz/\w+_fuzz\.cc", p))
    if not targets:
        errors.append("build.sh: no fuzz/*_fuzz.cc to build")
    for target in targets:
        family = target[len("fuzz/") : -len("_fuzz.cc")]
        if f"fuzz/{family}.dict" not in files:
            errors.append(f"{family}_fuzz: build.sh copies fuzz/{family}.dict, which is missing")
        if not any(p.startswith(f"fuzz/corpus/{family}/") for p in files):
            errors.append(f"{family}_fuzz: build.sh zips fuzz/corpus/{family}/, which is empty")
    return errors


def check_broken(files, cases_path):
    """Each case must be rejected with its `expect` message; returns the cases that were not."""
    with open(cases_path, encoding="utf-8") as f:
        cases = yaml.safe_load(f)
    failures = []
    for case in cases:
        broken = dict(files)
        if "delete" in case:
            broken.pop(case["delete"])
        else:
            old, new = case["replace"]
            if old not in broken.get(case["file"], ""):
                failures.append(f"{case['name']}: {old!r} is not in {case['file']}")
                continue
            broken[case["file"]] = broken[case["file"]].replace(old, new, 1)
        errors = check(broken)
        if any(case["expect"] in e for e in errors):
            print(f"rejected as expected: {case['name']}")
        else:
            failures.append(f"{case['name']}: expected an error containing {case['expect']!r}, "
                            f"got {errors}")
    return failures


def main(argv):
    files = load(argv[1])
    if len(argv) == 4 and argv[2] == "--broken":
        # The cases break a tree that passes, so each rejection is the case's own.
        problems = check(files) or check_broken(files, argv[3])
        passed = "every broken case rejected"
    elif len(argv) == 2:
        problems = check(files)
        passed = "ClusterFuzzLite workflows and build files agree"
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    print(f"FAILED: {len(problems)} problems" if problems else f"ok: {passed}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
