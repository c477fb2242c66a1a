"""What every live test (tests/live/test_*.py) shares: check() records a failed condition
and prints it at once; failures is the list of them (a test exits 1 when it is not empty);
require_root() exits 77, ctest's skip, when not run as root."""
import os
import sys

failures = []


def check(cond, what):
    """cond true: passes; false: what joins failures and is printed. Returns cond."""
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def require_root():
    if os.geteuid() != 0:
        print("SKIP: needs root")
        sys.exit(77)
