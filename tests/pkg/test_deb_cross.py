#!/usr/bin/env python3
"""The arm64 and ppc64el .debs, cross-built and install-tested under qemu-user (label pkg; root;
full tier: 14-32 minutes per architecture the first time on the shared 2-core machine,
1-2 minutes again with OUT/stage kept; outside CI's 60).

Usage: test_deb_cross.py SCHEDHOT SOURCE_DIR
Runs for the architectures in $SCHEDHOT_PKG_CROSS ("arm64 ppc64el" when SCHEDHOT_VM_FULL=1);
with neither set it exits 77 (skipped) saying so.

For each ARCH, packaging/cross-deb.sh ARCH (dpkg-buildpackage -a ARCH and lintian in a Debian 12
root of its own, then dpkg -i there and the installed schedhot run under qemu-ARCH-static);
then from its check.txt: the package's Architecture is ARCH and its Depends name ARCH's shared
libraries through dpkg-shlibdeps (libbpf1, libc6, libstdc++6) and python3:any; dpkg has it
installed; /usr/bin/schedhot is an ELF of ARCH's machine; and --version, `report` and `info`
of the shipped recording print exactly what SCHEDHOT (this machine's build of the same source)
prints of the same file (its path written as the package installs it), and the man page's
head is this build's. Prints how long each took.
"""
import os
import subprocess
import sys
import time

from checks import check, finish, run

exe, src = sys.argv[1], sys.argv[2]
E_MACHINE = {"arm64": 0xB7, "ppc64el": 0x15}  # EM_AARCH64, EM_PPC64
arches = os.environ.get("SCHEDHOT_PKG_CROSS", "arm64 ppc64el" if os.environ.get("SCHEDHOT_VM_FULL") == "1" else "").split()
if not arches:
    print("SKIP: the cross .debs are the full tier: SCHEDHOT_PKG_CROSS='arm64 ppc64el' (or SCHEDHOT_VM_FULL=1)")
    sys.exit(77)
bad = [a for a in arches if a not in E_MACHINE]
if bad:
    print(f"SCHEDHOT_PKG_CROSS: {' '.join(bad)}: the cross .debs are arm64 and ppc64el")
    sys.exit(2)
if os.geteuid() != 0:
    print("SKIP: needs root (chroot)")
    sys.exit(77)

shot = os.path.join(src, "packaging", "examples", "vm-7.3.shot")
build = os.path.dirname(os.path.abspath(exe))
installed = "/usr/share/doc/schedhot/examples/vm-7.3.shot"  # the same file, as the package installs it
here = {"version": run([exe, "--version"]).stdout, "report": run([exe, "report", shot]).stdout.replace(shot, installed),
        "info": run([exe, "info", shot]).stdout.replace(shot, installed)}
man = os.path.join(build, "packaging", "schedhot.1")
here["man"] = "".join(open(man).readlines()[:5]) if os.path.exists(man) else None


def sections(text):
    """check.txt's '== NAME' sections: {NAME: text after the line}."""
    out, name = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("== "):
            name = line[3:].strip()
            out[name] = ""
        elif name:
            out[name] += line
    return out


for arch in arches:
    out = os.path.join(build, f"deb-{arch}")
    t = time.time()
    r = run([os.path.join(src, "packaging", "cross-deb.sh"), arch, out], timeout=3600, stdin=subprocess.DEVNULL)
    print(r.stdout.strip())
    check(r.returncode == 0, f"{arch}: packaging/cross-deb.sh built and installed it ({r.returncode}; "
          f"{time.time() - t:.0f} s){': ' + r.stderr.strip()[-1500:] if r.returncode else ''}")
    if r.returncode != 0:
        continue
    s = sections(open(os.path.join(out, "check.txt")).read())
    check(s.get("architecture", "").strip() == arch, f"{arch}: Architecture {s.get('architecture', '').strip()!r}")
    dep = s.get("depends", "")
    check(all(d in dep for d in ("libbpf1", "libc6", "libstdc++6", "python3:any")),
          f"{arch}: Depends from dpkg-shlibdeps and python3:any: {dep.strip()}")
    check(s.get("installed", "").startswith(f"schedhot:{arch} ") and "install ok installed" in s.get("installed", ""),
          f"{arch}: dpkg -i in the root: {s.get('installed', '').strip()}")
    m = s.get("machine", "").strip()
    check(all(c in "0123456789abcdef" for c in m) and m != "" and int(m, 16) == E_MACHINE[arch], f"{arch}: /usr/bin/schedhot's e_machine 0x{m} (0x{E_MACHINE[arch]:x} expected)")
    for k in ("version", "report", "info", "man"):
        if k == "man" and here["man"] is None:
            print(f"{arch}: no {man}: man page not compared")
            continue
        same = s.get(k) == here[k]
        check(same, f"{arch}: `schedhot {k}` under qemu-user prints what this machine's prints"
              f" ({len(here[k] or '')} bytes){'' if same else ': ' + repr((s.get(k) or '')[:400])}")
sys.exit(finish())
