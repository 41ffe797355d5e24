#!/usr/bin/env python3
"""Mutation check for Yama's KUnit tests.

Breaks one rule at a time in security/yama/rules.c of a kernel worktree
(never the workspace's build/linux), runs the yama KUnit suites with
kunit.py and records which cases fail. A mutation that no case catches is
a hole in the tests. rules.c is restored after every mutation, also on
errors and interrupts.

usage: kunit/mutate.py TREE BUILD_DIR [NAME...]
Writes BUILD_DIR/mutations.json and prints one line per mutation.
"""
import json
import os
import subprocess
import sys

# The workspace's config of Yama's suites (absolute: kunit.py runs in TREE).
KUNITCONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "yama.kunitconfig")

# (name, old, new): an exact, unique text replacement in rules.c.
MUTATIONS = [
    ("ptrace: read access restricted too",
     "if (!(mode & PTRACE_MODE_ATTACH))\n\t\treturn true;",
     "if (!(mode & (PTRACE_MODE_ATTACH | PTRACE_MODE_READ)))\n\t\treturn true;"),
    ("ptrace: scope 0 restricts like scope 1",
     "\tcase YAMA_SCOPE_DISABLED:\n\t\treturn true;\n\tcase YAMA_SCOPE_RELATIONAL:\n\t\treturn facts",
     "\tcase YAMA_SCOPE_DISABLED:\n\tcase YAMA_SCOPE_RELATIONAL:\n\t\treturn facts"),
    ("ptrace: dead-target check dropped",
     "return facts->target_alive &&\n", "return true &&\n"),
    ("ptrace: descendant ignored at scope 1",
     "(facts->is_descendant || ", "(false || "),
    ("ptrace: current tracer ignored at scope 1",
     "facts->is_tracer ||", "false ||"),
    ("ptrace: PR_SET_PTRACER exception ignored at scope 1",
     "\t\t\tfacts->has_exception || ", "\t\t\tfalse || "),
    ("ptrace: CAP_SYS_PTRACE ignored at scope 1",
     "facts->has_exception || facts->has_capability);",
     "facts->has_exception || false);"),
    ("ptrace: scope 2 ignores the capability (denies)",
     "case YAMA_SCOPE_CAPABILITY:\n\t\treturn facts->has_capability;",
     "case YAMA_SCOPE_CAPABILITY:\n\t\treturn false;"),
    ("ptrace: scope 2 ignores the capability (allows)",
     "case YAMA_SCOPE_CAPABILITY:\n\t\treturn facts->has_capability;",
     "case YAMA_SCOPE_CAPABILITY:\n\t\treturn true;"),
    ("ptrace: scope 2 needs a live target too",
     "case YAMA_SCOPE_CAPABILITY:\n\t\treturn facts->has_capability;",
     "case YAMA_SCOPE_CAPABILITY:\n\t\treturn facts->target_alive && facts->has_capability;"),
    ("ptrace: out-of-range scope allows attach",
     "\tcase YAMA_SCOPE_NO_ATTACH:\n\tdefault:\n\t\treturn false;\n\t}\n}\n\n/**\n * yama_ptrace_traceme",
     "\tcase YAMA_SCOPE_NO_ATTACH:\n\t\treturn false;\n\tdefault:\n\t\treturn true;\n\t}\n}\n\n/**\n * yama_ptrace_traceme"),
    ("ptrace: out-of-range scope treated as scope 1",
     "\tcase YAMA_SCOPE_NO_ATTACH:\n\tdefault:\n\t\treturn false;\n\t}\n}\n\n/**\n * yama_ptrace_traceme",
     "\tcase YAMA_SCOPE_NO_ATTACH:\n\t\treturn false;\n\tdefault:\n\t\treturn facts->target_alive && facts->is_descendant;\n\t}\n}\n\n/**\n * yama_ptrace_traceme"),
    ("traceme: scope 2 ignores the parent's capability",
     "\tcase YAMA_SCOPE_CAPABILITY:\n\t\treturn parent_has_capability;",
     "\tcase YAMA_SCOPE_CAPABILITY:\n\t\treturn true;"),
    ("traceme: scope 1 denies",
     "\tcase YAMA_SCOPE_DISABLED:\n\tcase YAMA_SCOPE_RELATIONAL:\n\t\treturn true;\n\tcase YAMA_SCOPE_CAPABILITY:\n\t\treturn parent_has_capability;",
     "\tcase YAMA_SCOPE_DISABLED:\n\t\treturn true;\n\tcase YAMA_SCOPE_RELATIONAL:\n\tcase YAMA_SCOPE_CAPABILITY:\n\t\treturn parent_has_capability;"),
    ("traceme: scope 3 allows with the capability",
     "\t\treturn parent_has_capability;\n\tcase YAMA_SCOPE_NO_ATTACH:\n\tdefault:\n\t\treturn false;",
     "\tcase YAMA_SCOPE_NO_ATTACH:\n\t\treturn parent_has_capability;\n\tdefault:\n\t\treturn false;"),
    ("traceme: out-of-range scope allows",
     "\t\treturn parent_has_capability;\n\tcase YAMA_SCOPE_NO_ATTACH:\n\tdefault:\n\t\treturn false;",
     "\t\treturn parent_has_capability;\n\tcase YAMA_SCOPE_NO_ATTACH:\n\t\treturn false;\n\tdefault:\n\t\treturn true;"),
    ("symlink: sysctl ignored",
     "\tif (!enabled)\n\t\treturn true;\n\tif (uid_eq(follower",
     "\tif (uid_eq(follower"),
    ("symlink: follower-owns-link condition dropped",
     "\tif (uid_eq(follower, link_owner))\n\t\treturn true;\n", ""),
    ("symlink: sticky check dropped (world-writable is enough)",
     "if ((dir_mode & YAMA_STICKY_WORLD_WRITABLE) !=\n\t    YAMA_STICKY_WORLD_WRITABLE)",
     "if (!(dir_mode & 0002))"),
    ("symlink: world-writable check dropped (sticky is enough)",
     "if ((dir_mode & YAMA_STICKY_WORLD_WRITABLE) !=\n\t    YAMA_STICKY_WORLD_WRITABLE)",
     "if (!(dir_mode & S_ISVTX))"),
    ("symlink: either bit is enough",
     "if ((dir_mode & YAMA_STICKY_WORLD_WRITABLE) !=\n\t    YAMA_STICKY_WORLD_WRITABLE)",
     "if (!(dir_mode & YAMA_STICKY_WORLD_WRITABLE))"),
    ("symlink: group-write counted as world-write",
     "if ((dir_mode & YAMA_STICKY_WORLD_WRITABLE) !=\n\t    YAMA_STICKY_WORLD_WRITABLE)",
     "if (!(dir_mode & S_ISVTX) || !(dir_mode & 0022))"),
    ("symlink: directory-owner condition dropped",
     "return uid_valid(dir_owner) && uid_eq(dir_owner, link_owner);",
     "return false;"),
    ("symlink: directory owner compared with the follower",
     "return uid_valid(dir_owner) && uid_eq(dir_owner, link_owner);",
     "return uid_valid(dir_owner) && uid_eq(dir_owner, follower);"),
    ("symlink: root follower overrides",
     "\tif (uid_eq(follower, link_owner))\n\t\treturn true;\n",
     "\tif (uid_eq(follower, link_owner) || uid_eq(follower, GLOBAL_ROOT_UID))\n\t\treturn true;\n"),
    ("symlink: invalid directory owner matches",
     "return uid_valid(dir_owner) && uid_eq(dir_owner, link_owner);",
     "return uid_eq(dir_owner, link_owner);"),
    ("hardlink: sysctl ignored",
     "if (!enabled || is_owner || has_cap_fowner)",
     "if (is_owner || has_cap_fowner)"),
    ("hardlink: owner override dropped",
     "if (!enabled || is_owner || has_cap_fowner)",
     "if (!enabled || has_cap_fowner)"),
    ("hardlink: CAP_FOWNER override dropped",
     "if (!enabled || is_owner || has_cap_fowner)",
     "if (!enabled || is_owner)"),
    ("hardlink: regular-file check dropped",
     "\tif (!S_ISREG(mode))\n\t\treturn false;\n", ""),
    ("hardlink: only directories refused",
     "\tif (!S_ISREG(mode))\n\t\treturn false;\n",
     "\tif (S_ISDIR(mode))\n\t\treturn false;\n"),
    ("hardlink: setuid check dropped",
     "\tif (mode & S_ISUID)\n\t\treturn false;\n", ""),
    ("hardlink: setuid refused only when executable",
     "\tif (mode & S_ISUID)\n\t\treturn false;\n",
     "\tif ((mode & S_ISUID) && (mode & 0111))\n\t\treturn false;\n"),
    ("hardlink: setgid check dropped",
     "\tif ((mode & YAMA_SETGID_EXECUTABLE) == YAMA_SETGID_EXECUTABLE)\n\t\treturn false;\n",
     ""),
    ("hardlink: setgid refused even without group execute",
     "if ((mode & YAMA_SETGID_EXECUTABLE) == YAMA_SETGID_EXECUTABLE)",
     "if (mode & S_ISGID)"),
    ("hardlink: setgid checks other-execute instead of group-execute",
     "if ((mode & YAMA_SETGID_EXECUTABLE) == YAMA_SETGID_EXECUTABLE)",
     "if ((mode & (S_ISGID | 0001)) == (S_ISGID | 0001))"),
    ("hardlink: readable is enough",
     "return may_read && may_write;", "return may_read;"),
    ("hardlink: writable is enough",
     "return may_read && may_write;", "return may_write;"),
    ("hardlink: either access is enough",
     "return may_read && may_write;", "return may_read || may_write;"),
    ("hardlink: owner permission bits consulted",
     "return may_read && may_write;",
     "return may_read && may_write && (mode & 0600) == 0600;"),
]


def failed_cases(node, path=()):
    """Yield the names of failed or crashed leaf cases of a kunit.py JSON."""
    name = node.get("name", "")
    subs = node.get("sub_groups", []) + node.get("test_cases", [])
    here = path + ((name,) if name else ())
    if not subs:
        if node.get("status") not in ("PASS", "SKIP"):
            yield ".".join(here[1:]) + " [" + str(node.get("status")) + "]"
        return
    for sub in subs:
        yield from failed_cases(sub, here)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tree, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    only = sys.argv[3:]
    if os.path.realpath(tree) == os.path.realpath(
            os.path.join(os.path.dirname(__file__), "..", "build", "linux")):
        sys.exit("refusing to mutate the workspace tree build/linux")
    rules = os.path.join(tree, "security/yama/rules.c")
    with open(rules) as f:
        pristine = f.read()
    results = []
    try:
        for name, old, new in MUTATIONS:
            if only and name not in only:
                continue
            if pristine.count(old) != 1:
                print("n/a     %s (text not found once in rules.c)" % name,
                      flush=True)
                results.append({"mutation": name, "result": "n/a"})
                continue
            with open(rules, "w") as f:
                f.write(pristine.replace(old, new))
            js = os.path.join(build, "mutation.json")
            if os.path.exists(js):
                os.unlink(js)
            proc = subprocess.run(
                [sys.executable, "tools/testing/kunit/kunit.py", "run",
                 "--arch=x86_64", "--kunitconfig=" + KUNITCONFIG,
                 "--build_dir=" + build, "--make_options", "CC=ccache gcc",
                 "--jobs", "2", "--timeout", "300", "--json=" + js,
                 "yama*"],
                cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True)
            caught = []
            if os.path.exists(js):
                with open(js) as f:
                    caught = list(failed_cases(json.load(f)))
            if caught:
                verdict = "caught"
            elif proc.returncode:
                verdict = "error"
                caught = proc.stdout.splitlines()[-5:]
            else:
                verdict = "MISSED"
            print("%-7s %s: %d case(s), first %s" % (
                verdict, name, len(caught), caught[0] if caught else "-"),
                flush=True)
            results.append({"mutation": name, "result": verdict,
                            "failed": caught})
    finally:
        with open(rules, "w") as f:
            f.write(pristine)
    with open(os.path.join(build, "mutations.json"), "w") as f:
        json.dump(results, f, indent=1)
    missed = [r for r in results if r["result"] in ("MISSED", "error")]
    print("%d mutations, %d caught, %d missed or errors" % (
        len(results), sum(r["result"] == "caught" for r in results),
        len(missed)))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
