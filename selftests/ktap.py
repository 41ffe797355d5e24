#!/usr/bin/env python3
"""Read what one selftest boot wrote: the KTAP of the result channel and the
kernel console. Print one line per test case, write results.json, and exit
non-zero when the boot failed.

The KTAP is nested as run_kselftest.sh nests it: top level one line per
program ("ok 1 selftests: yama: sysctl_test"), the program's own KTAP
indented by "# ". kselftest_harness.h names a skipped case only in its
"#  RUN  fixture.variant.test ..." line, so results are named from there.

Usage: ktap.py SCENARIO KTAP_LOG CONSOLE_LOG OUT_JSON
       [--all-skip] [--must-pass GLOB]... [--console-must REGEX]...
       [--console-must-not REGEX]...
"""

import argparse
import fnmatch
import json
import os
import re
import sys

TOP_PLAN = re.compile(r"^1\.\.(\d+)$")
TOP_RESULT = re.compile(r"^(not ok|ok) (\d+) selftests: (\S+): (\S+)(.*)$")
NESTED_PLAN = re.compile(r"^# 1\.\.(\d+)$")
NESTED_RUN = re.compile(r"^# #\s+RUN\s+(\S+) \.\.\.$")
NESTED_RESULT = re.compile(r"^# (not ok|ok) (\d+)(?: ([^#].*?))?"
                           r"(?:\s*# (SKIP|XFAIL|TODO)\b ?(.*))?$")

# The kernel reports that fail a boot: one list for every stage.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools"))
from kernel_reports import scan as scan_console  # noqa: E402


def parse_ktap(text):
    """Return (programs, cases, planned, nested_planned): programs are dicts
    with name, result and detail, cases dicts with program, name, result and
    reason; nested_planned the plan of each program."""
    programs, cases, nested_planned = [], [], {}
    planned = current = run_name = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = TOP_PLAN.match(line)
        if m:   # one plan per collection
            planned = (planned or 0) + int(m.group(1))
            continue
        m = re.match(r"^# selftests: (\S+): (\S+)$", line)
        if m:
            current = m.group(2)
            run_name = None
            continue
        m = TOP_RESULT.match(line)
        if m:
            rest = m.group(5)
            if m.group(1) == "not ok":
                result = "fail"
            elif "# SKIP" in rest:
                result = "skip"
            else:
                result = "pass"
            programs.append({"name": m.group(4), "result": result,
                             "detail": rest.strip(" #")})
            current = None
            continue
        if current is None:
            continue
        m = NESTED_PLAN.match(line)
        if m:
            nested_planned[current] = int(m.group(1))
            continue
        m = NESTED_RUN.match(line)
        if m:
            run_name = m.group(1)
            continue
        m = NESTED_RESULT.match(line)
        if m:
            name = m.group(3) or run_name or "case%s" % m.group(2)
            if m.group(4) == "SKIP":
                result = "skip"
            elif m.group(1) == "not ok":
                result = "fail"
            else:
                result = "pass"
            cases.append({"program": current, "name": name,
                          "result": result, "reason": m.group(5) or ""})
            run_name = None
    if current is not None:
        # the runner named it and never reported it: it hung, or the boot
        # ended under it
        programs.append({"name": current, "result": "fail",
                         "detail": "started, no result (hung or cut off)"})
    return programs, cases, planned, nested_planned


# A program's figures, "# NAME: key=value key=value ..." in its output
# (nested: "# # "), go to results.json's "counts" under NAME: vfs_diff
# (yama_vfs_diff), yama_stress and stress.KIND, yama_badinput.
COUNTS = re.compile(r"^# # ([\w.]+): ((?:\w+=\S+ ?)+)$")


def parse_counts(text):
    """Return {name: {key: value}} from the programs' count lines; values
    that are numbers become numbers."""
    found = {}
    for line in text.splitlines():
        m = COUNTS.match(line.rstrip("\r"))
        if not m:
            continue
        pairs = (pair.partition("=") for pair in m.group(2).split())
        found[m.group(1)] = {key: number(value) for key, _, value in pairs}
    return found


def number(value):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def read(path):
    """The log, or "" when the boot left none."""
    try:
        return open(path, errors="replace").read()
    except OSError:
        return ""


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("ktap")
    ap.add_argument("console")
    ap.add_argument("out")
    ap.add_argument("--all-skip", action="store_true",
                    help="every case must skip (Yama absent)")
    ap.add_argument("--must-pass", action="append", default=[],
                    help="cases matching GLOB must run and pass")
    ap.add_argument("--console-must", action="append", default=[])
    ap.add_argument("--console-must-not", action="append", default=[])
    ap.add_argument("--problem", action="append", default=[],
                    help="a problem found outside the logs")
    ap.add_argument("--programs", type=int, default=None,
                    help="how many programs the boot had to run")
    args = ap.parse_args(argv)

    ktap, console = read(args.ktap), read(args.console)
    programs, cases, planned, nested_planned = parse_ktap(ktap)
    problems = list(args.problem)
    if planned is None:
        problems.append("no KTAP plan on the result channel (boot failed?)")
    elif len(programs) != planned:
        problems.append("%d of %d programs reported" % (len(programs),
                                                        planned))
    if args.programs is not None and planned not in (None, args.programs):
        problems.append("planned %s programs, expected %d" %
                        (planned, args.programs))
    problems += [l for l in ktap.splitlines() if l.startswith("Bail out!")]
    if "# yama-selftests: end" not in ktap:
        problems.append("the run did not reach its end")
    for prog in programs:
        mine = [c["result"] for c in cases if c["program"] == prog["name"]]
        want = nested_planned.get(prog["name"])
        if want is not None and len(mine) != want:
            problems.append("%s: %d of %d cases reported" %
                            (prog["name"], len(mine), want))
        if prog["result"] == "fail" and "fail" not in mine:
            problems.append("%s failed: %s" % (prog["name"], prog["detail"]))

    problems += ["console: " + bad for bad in scan_console(console)]
    for regex in args.console_must:
        if not re.search(regex, console, re.M):
            problems.append("console lacks /%s/" % regex)
    for regex in args.console_must_not:
        m = re.search(regex, console, re.M)
        if m:
            problems.append("console has /%s/: %s" % (regex, m.group(0)))

    if args.all_skip:
        problems += ["%s: %s without Yama (must skip)" % (c["name"], c["result"])
                     for c in cases if c["result"] != "skip"]
    for glob in args.must_pass:
        matched = [c for c in cases if fnmatch.fnmatch(c["name"], glob)]
        if not matched:
            problems.append("no case matches %s" % glob)
        for c in matched:
            if c["result"] != "pass":
                problems.append("%s: %s, must pass here%s" % (
                    c["name"], c["result"],
                    " (%s)" % c["reason"] if c["reason"] else ""))

    counts = {k: sum(1 for c in cases if c["result"] == k)
              for k in ("pass", "fail", "skip")}
    for c in cases:
        extra = "  (%s)" % c["reason"] if c["reason"] else ""
        print("  %-4s %s/%s: %s%s" % (c["result"].upper(), args.scenario,
                                      c["program"], c["name"], extra))
    for p in problems:
        print("  FAIL %s: %s" % (args.scenario, p))
    summary = {
        "scenario": args.scenario,
        "cases": len(cases),
        **counts,   # pass, fail, skip
        "problems": problems,
        "ok": counts["fail"] == 0 and not problems,
        "results": cases,
    }
    counts_found = parse_counts(ktap)
    if counts_found:
        summary["counts"] = counts_found
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    print("  %s: %d cases: %d passed, %d failed, %d skipped%s" % (
        args.scenario, len(cases), counts["pass"], counts["fail"],
        counts["skip"], ", %d other problems" % len(problems)
        if problems else ""))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
