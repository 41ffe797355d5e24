"""make bench's table from the guest's channel: ratios and problems."""
from yws import bench


def channel(prof_on=3, end=True, drop=None):
    lines = ["I kernel 6.12.0", "I N stat=1000 hardlink=300 ptrace=500 prof=10000 rounds=3",
             "I filter leave_rcu yama_inode_follow_link"]
    ns = {"yama": 110.0, "off": 100.0, "vfs": 105.0, "nohook": 99.0, "scope1": 300.0, "scope0": 200.0}
    benches = [(b, ("yama", "off", "vfs", "nohook")) for b in bench.STAT]
    benches += [("ptrace-depth%d" % d, ("scope1", "scope0")) for d in (1, 16)]
    for i in range(3):
        for b, variants in benches:
            lines += ["R %d %s %s %.1f" % (i, b, v, ns[v] + i) for v in variants
                      if (b, v) != drop]
    for r in (1, 2):
        for b in ("symlink", "symlink-dirowner", "midlink"):
            lines += ["P %d %s yama leave_rcu %d" % (r, b, prof_on),
                      "P %d %s off leave_rcu 3" % (r, b),
                      "P %d %s yama yama_inode_follow_link 9" % (r, b)]
    return "\n".join(lines + (["END"] if end else [])) + "\n"


def test_ratios_of_a_clean_run():
    lines, rec = bench.report(channel(), "host")
    assert rec["problems"] == []
    sym = rec["stat"][0]
    assert sym["bench"] == "symlink" and sym["rounds"] == 3
    assert sym["median_ns"] == {"yama": 111.0, "off": 101.0, "vfs": 106.0, "nohook": 100.0}
    assert sym["yama/off"]["ratio"] == round(111 / 101, 3)
    assert sym["off/nohook"]["ratio"] == 1.01 and sym["yama/nohook"]["ratio"] == 1.11
    assert sym["yama/off"]["min"] == 1.1
    assert rec["ptrace"][1]["bench"] == "ptrace-depth16"
    assert rec["ptrace"][1]["scope1/scope0"]["paired"] == round(301 / 201, 3)
    assert any(l.startswith("symlink ") and "1.099" in l and "1.110" in l for l in lines)


def test_every_boot_must_reach_end():
    problems = bench.report(channel(), "host", boots=3)[1]["problems"]
    assert problems == ["a bench boot did not reach END (see console.log)"]
    assert bench.report(channel() * 3, "host", boots=3)[1]["problems"] == []


def test_more_rcu_walk_fallbacks_with_yama_on_is_a_problem():
    rec = bench.report(channel(prof_on=4), "host")[1]
    assert len(rec["problems"]) == 3
    assert all("leave_rcu" in p for p in rec["problems"])


def test_missing_run_and_no_end_are_problems():
    rec = bench.report(channel(end=False, drop=("midlink", "vfs")), "host")[1]
    assert "no run of midlink with variant vfs" in rec["problems"]
    assert any("did not reach END" in p for p in rec["problems"])
    assert bench.report("", "host")[1]["problems"]
