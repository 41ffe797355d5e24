"""python3 -m yws [paths] STAGE [args]: the workspace's one command line."""
import argparse
import functools
import importlib
import pkgutil
import sys
from pathlib import Path

from .ws import StageError, Workspace

GLOBAL = {"--build": "build folder (default: build/)",
          "--out": "what a user takes away (default: out/)",
          "--tree": "the author's kernel tree (default: author/)",
          "--series": "the series' patches and order (default: series/)",
          "--base": "tools/bases/BASE.toml (default: linux-6.12)",
          "--sender": '"Name <address>" of the posting (default: git config)'}


@functools.cache
def commands():
    """The COMMANDS of every module of the package. A module that does not
    import fails the command (no stage goes missing quietly), and so does a
    command that two modules define."""
    found = {}
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        for name, cmd in getattr(importlib.import_module("yws." + mod.name),
                                 "COMMANDS", {}).items():
            if name in found:
                raise SystemExit("error: yws.%s defines the command %s twice" % (mod.name, name))
            found[name] = cmd
    return found


def stage_argv(argv):
    """ARGV from the stage name on (what a result records as its command)."""
    i = 0
    while i < len(argv) and argv[i].split("=")[0] in GLOBAL:
        i += 1 if "=" in argv[i] else 2
    return argv[i:]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python3 -m yws", description=__doc__)
    for flag, help_line in GLOBAL.items():
        ap.add_argument(flag, default=None, help=help_line)
    sub = ap.add_subparsers(dest="stage", required=True, metavar="STAGE")
    cmds = commands()
    for name, (help_line, add_args, _) in cmds.items():
        p = sub.add_parser(name, help=help_line, description=help_line)
        if add_args:
            add_args(p)
    args = ap.parse_args(argv)
    ws = Workspace(build=args.build, out=args.out, tree=args.tree,
                   series=args.series, base=args.base or "linux-6.12",
                   sender=args.sender)
    ws.argv = stage_argv(argv)
    try:
        return cmds[args.stage][2](ws, args)
    except StageError as e:
        print("error: %s: %s" % (args.stage, e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
