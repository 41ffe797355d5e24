"""The Yama submission workspace (python3 -m yws --help)."""
