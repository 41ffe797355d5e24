#!/usr/bin/env python3
"""The order of the series: the one reader of series/series (quilt's
format: one patch file name per line; blank lines and lines starting with
'#' are not patches), and the one place the Python stages take the
workspace's folders from (workspace()). Imported by the Python stages; the
shell ones call it through lib.sh's series_patches:

    tools/series.py SERIES_DIR      the patch names, one per line
"""
import collections
import os
import sys

Workspace = collections.namedtuple("Workspace", "WS BUILD OUT TREE RESULTS SERIES_DIR")


def workspace(env=os.environ):
    """The workspace's folders as lib.sh exports them, with lib.sh's
    defaults: WS (required), BUILD ($WS/build), OUT ($WS/out), TREE
    ($BUILD/linux), RESULTS ($BUILD/results), SERIES_DIR ($WS/series,
    absolute)."""
    ws = env["WS"]
    build = env.get("BUILD") or os.path.join(ws, "build")
    return Workspace(ws, build, env.get("OUT") or os.path.join(ws, "out"),
                     env.get("TREE") or os.path.join(build, "linux"),
                     env.get("RESULTS") or os.path.join(build, "results"),
                     os.path.abspath(env.get("SERIES_DIR") or os.path.join(ws, "series")))


def patch_names(series_dir):
    """The patch file names of series_dir/series, in order; [] when the
    file is missing."""
    try:
        with open(os.path.join(series_dir, "series")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    return [line.strip() for line in lines
            if line.strip() and not line.strip().startswith("#")]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tools/series.py SERIES_DIR")
    for name in patch_names(sys.argv[1]):
        print(name)
