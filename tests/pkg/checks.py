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


def binary_path_problems(binary, tree_paths):
    """What makes binary look for code in a build or source tree (issue 28 item 1: serve's
    TLS bridges were dlopen()ed from the build tree, so a library planted there ran as root):
    an RPATH or RUNPATH in its dynamic section, a needed library by path, and, in what is
    loaded (`strings -a` of the binary without its debug sections), a tree path or a trace
    of the old search (/usr/lib/schedhot, ../lib/schedhot, "lib/schedhot:", libssl.so). tree_paths: the build and source directories to look
    for. Returns a list of one-line problems (empty: clean)."""
    import os, tempfile
    problems = []
    r = run(["readelf", "-d", "-W", binary])
    if r.returncode != 0:
        return ["readelf -d %s: %s" % (binary, r.stderr.strip())]
    for line in r.stdout.splitlines():
        if "(RPATH)" in line or "(RUNPATH)" in line:
            problems.append("dynamic section: " + line.strip())
        if "(NEEDED)" in line and "/" in line.split("[", 1)[-1]:
            problems.append("a needed library by path: " + line.strip())
    with tempfile.TemporaryDirectory() as td:
        stripped = os.path.join(td, "bin")
        r = run(["objcopy", "--strip-debug", binary, stripped])
        if r.returncode != 0:
            return problems + ["objcopy --strip-debug %s: %s" % (binary, r.stderr.strip())]
        text = run(["strings", "-a", stripped]).stdout
    for p in [t.rstrip("/") for t in tree_paths if t and t != "/"] + ["/usr/lib/schedhot", "../lib/schedhot", "lib/schedhot:",
                                                                      "libssl.so"]:
        hits = sorted({ln for ln in text.splitlines() if p in ln})
        if hits:
            problems.append("strings -a: %d string(s) with %s, e.g. %r" % (len(hits), p, hits[0][:160]))
    return problems
