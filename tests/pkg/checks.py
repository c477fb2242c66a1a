"""What the tests/pkg scripts share: a check that prints ok/FAIL and keeps the failures,
a subprocess run that captures text, and the closing line."""
import subprocess

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def finish():
    """The closing line; the exit status (1 when a check failed)."""
    print("%d failed" % len(failures))
    return 1 if failures else 0
