"""Shared by every test of tools/tests: WS is the workspace these tests
sit in (the code they test is next to them), exported for the scripts they
run, and the Python modules of the stages are importable by name."""
import os
import sys

WS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["WS"] = WS
for d in ("tools", "tools/mail", "tools/gates", "selftests/stress"):
    sys.path.insert(0, os.path.join(WS, d))
