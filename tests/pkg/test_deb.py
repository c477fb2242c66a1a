#!/usr/bin/env python3
"""The .deb, built with Debian's tooling and installed into a clean Debian 12 root (label pkg; root).

Usage: test_deb.py BUILD_DIR SOURCE_DIR

  1. packaging/build-deb.sh BUILD_DIR/deb: dpkg-buildpackage and lintian (no error); the
     package's version is CMakeLists.txt's, its Depends computed by dpkg-shlibdeps.
  2. A clean Debian 12 root from Debian's archive (mmdebstrap --variant=apt, with the
     package's dependencies, man-db, bash-completion, zsh and systemd), cached as a tarball
     in /var/cache/schedhot-pkg (its name carries a hash of the package list).
  3. In a chroot of it (own mount and PID namespace, /proc of its own): dpkg -i; then
     schedhot --version, schedhot info and report of the shipped recording, man schedhot and
     man schedhot-fleet, the bash completion as bash-completion loads it, the zsh
     completion as compinit finds it, systemd-analyze verify of both units (man page
     included), /etc/default/schedhot a conffile.
  4. The units under a real systemd: a copy of that root booted with systemd-nspawn starts
     schedhot-record.service (a dynamic user with exactly its capabilities, rotating) and
     schedhot-serve.service; their recordings and /metrics are checked; dpkg --purge there
     removes the state directory systemd made.
  5. The recording service's state as systemd leaves it (/var/lib/private/schedhot, the
     /var/lib/schedhot link), then dpkg --purge: the file list of the root equals the one
     before dpkg -i (paths; dpkg's own database, logs and caches left out).
Prints how long each part took.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

from checks import binary_path_problems, check, failures, finish, run

CACHE = os.environ.get("SCHEDHOT_PKG_CACHE", "/var/cache/schedhot-pkg")
SUITE = "bookworm"
EXTRA = ["man-db", "bash-completion", "zsh", "systemd"]
# Compared by path before dpkg -i and after dpkg --purge, except dpkg's and apt's own state:
SKIP = ("proc", "sys", "dev", "run", "tmp", "var/lib/dpkg", "var/log", "var/cache/debconf", "var/cache/man",
        "var/cache/ldconfig")




def in_root(root, script, env=None):
    """sh -c SCRIPT chrooted in ROOT, in mount and PID namespaces of its own with a fresh /proc."""
    e = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LC_ALL": "C.UTF-8",
         "TERM": "dumb", "DEBIAN_FRONTEND": "noninteractive"}
    e.update(env or {})
    return run(["unshare", "--mount", "--pid", "--fork", "--mount-proc=%s/proc" % root, "chroot", root,
                "/bin/sh", "-c", script], env=e)


def tree(root):
    paths = set()
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel != "." and (rel in SKIP or rel.startswith(tuple(s + "/" for s in SKIP))):
            dirs[:] = []
            continue
        for n in dirs + files:
            p = os.path.normpath(os.path.join(rel, n))
            if p not in SKIP:
                paths.add(p)
    return paths


def field(deb, name):
    return run(["dpkg-deb", "-f", deb, name]).stdout.strip()


def base_tarball(deb):
    """The clean root's tarball: built by mmdebstrap once per package list, then reused."""
    pkgs = set(EXTRA)
    for f in ("Depends", "Recommends"):
        for dep in field(deb, f).split(","):
            if dep.strip():
                pkgs.add(re.match(r"\s*([\w.+-]+)", dep.split("|")[0]).group(1))
    pkgs = sorted(pkgs)
    key = hashlib.sha256((SUITE + " apt " + " ".join(pkgs)).encode()).hexdigest()[:12]
    tar = os.path.join(CACHE, "%s-apt-%s.tar" % (SUITE, key))
    if os.path.exists(tar):
        print("base: %s (cached; packages %s)" % (tar, " ".join(pkgs)))
        return tar, False
    os.makedirs(CACHE, exist_ok=True)
    for old in os.listdir(CACHE):  # another package list: no longer used
        if old.startswith(SUITE + "-apt-") and old.endswith(".tar") and os.path.isfile(os.path.join(CACHE, old)):
            os.unlink(os.path.join(CACHE, old))
    sources = [s for s in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list")
               if os.path.exists(s) and os.path.getsize(s) > 0]
    t = time.time()
    part = tar[:-len(".tar")] + ".part.tar"
    r = run(["mmdebstrap", "--quiet", "--mode=root", "--format=tar", "--variant=apt", "--include=" + ",".join(pkgs),
             SUITE, part] + sources[:1], timeout=1500, stdin=subprocess.DEVNULL)
    check(r.returncode == 0, "mmdebstrap %s with %s (%d: %s)" % (SUITE, pkgs, r.returncode, r.stderr.strip()[-800:]))
    if r.returncode != 0:
        return None, True
    os.rename(part, tar)
    print("base: %s built in %.0f s (%d MB)" % (tar, time.time() - t, os.path.getsize(tar) >> 20))
    return tar, True


BOOT_CHECK = r"""#!/bin/sh
# Run by check.service in the booted copy: the units as systemd starts them.
printf 'SCHEDHOT_ROTATE=2\nSCHEDHOT_MAX_SIZE=64K\nSCHEDHOT_INTERVAL=20ms\n' >> /etc/default/schedhot
systemctl start schedhot-record.service
# until a third file (record.shot.2) appears (about 20 s on the 2-core development machine), then 3 s more
i=0; while [ $i -lt 120 ] && [ ! -e /var/lib/schedhot/record.shot.2 ]; do sleep 1; i=$((i + 1)); done; sleep 3
echo "record-active $(systemctl is-active schedhot-record.service)"
pid=$(systemctl show -P MainPID schedhot-record.service)
grep -E "^(Uid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):" /proc/$pid/status | sed 's/^/record-/'
systemctl stop schedhot-record.service
echo "record-stopped $(systemctl show -P Result schedhot-record.service) $(systemctl show -P ExecMainStatus schedhot-record.service)"
for f in /var/lib/schedhot/record.shot /var/lib/schedhot/record.shot.1 /var/lib/schedhot/record.shot.2 /var/lib/schedhot/record.shot.3; do
  [ -e $f ] && echo "file $f $(stat -c %u $f) $(schedhot info --json $f | tr -d '\n')"
done
systemctl start schedhot-serve.service
sleep 4
echo "serve-active $(systemctl is-active schedhot-serve.service)"
pid=$(systemctl show -P MainPID schedhot-serve.service)
grep -E "^(Uid|CapEff):" /proc/$pid/status | sed 's/^/serve-/'
python3 -c 'import urllib.request; print("metrics", urllib.request.urlopen("http://127.0.0.1:9870/metrics").read().decode().replace("\n", " | "))'
systemctl stop schedhot-serve.service
echo "serve-stopped $(systemctl show -P Result schedhot-serve.service)"
journalctl --no-pager -q -u schedhot-record -u schedhot-serve | sed 's/^/journal /'
echo done
"""


def boot_units(root, build, version):
    """The packaged units started by a real systemd: a copy of the installed root booted with
    systemd-nspawn (given CAP_BPF, CAP_PERFMON, CAP_SYSLOG and the bpf and perf_event_open
    system calls, which nspawn withholds from its containers by default), where check.service
    starts schedhot-record (rotating fast: 20 ms, 64K, 2 files kept), then schedhot-serve, reports
    and powers off. Then dpkg --purge there removes the state directory systemd made."""
    if not shutil.which("systemd-nspawn"):
        check(False, "systemd-nspawn is installed (Debian package systemd-container, packaging/deps.txt)")
        return
    t = time.time()
    boot = root + "-boot"
    shutil.rmtree(boot, ignore_errors=True)
    r = run(["cp", "-a", root, boot])
    check(r.returncode == 0, "a copy of the root to boot (%s)" % r.stderr.strip())
    with open(os.path.join(boot, "root/check.sh"), "w") as f:
        f.write(BOOT_CHECK)
    os.chmod(os.path.join(boot, "root/check.sh"), 0o755)
    with open(os.path.join(boot, "etc/systemd/system/check.service"), "w") as f:
        f.write("[Unit]\nAfter=multi-user.target\n[Service]\nType=oneshot\nStandardOutput=file:/root/result.txt\n"
                "StandardError=file:/root/result.err\nExecStart=/root/check.sh\n"
                "ExecStartPost=-/bin/systemctl --no-block poweroff\n[Install]\nWantedBy=multi-user.target\n")
    os.symlink("/etc/systemd/system/check.service",
               os.path.join(boot, "etc/systemd/system/multi-user.target.wants/check.service"))
    r = run(["timeout", "300", "systemd-nspawn", "--quiet", "--boot", "--directory", boot, "--register=no", "--keep-unit",
             "--capability=CAP_BPF,CAP_PERFMON,CAP_SYSLOG", "--system-call-filter=bpf perf_event_open"],
            timeout=330, stdin=subprocess.DEVNULL)
    try:
        res = open(os.path.join(boot, "root/result.txt")).read()
    except OSError:
        res = ""
    booted = r.returncode == 0 and res.endswith("done\n")
    check(booted, "booted with systemd-nspawn, check.service ran (%d%s)"
          % (r.returncode, "" if booted else ": " + (r.stdout + r.stderr).strip()[-600:]))
    kv = {}
    for line in res.splitlines():
        k, _, v = line.partition(" ") if not re.match(r"^\w+-\w+:", line) else line.partition(":")
        kv.setdefault(k, []).append(v.strip())
    host = run([os.path.join(build, "schedhot"), "probes", "--json"])
    want_probes = sorted(p["probe"] for p in json.loads(host.stdout)["probes"] if p["attached"]) if host.returncode == 0 else []
    caps = "000000c400000000"  # CAP_BPF (39), CAP_PERFMON (38), CAP_SYSLOG (34)
    check(kv.get("record-active") == ["active"], "schedhot-record.service still active after its rotations: %s"
          % kv.get("record-active"))
    uid = int((kv.get("record-Uid") or ["0"])[0].split()[0])
    check(61184 <= uid <= 65519, "schedhot-record runs as a dynamic user (uid %d)" % uid)
    for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        check(kv.get("record-" + k) == [caps], "schedhot-record %s = %s: exactly CAP_BPF CAP_PERFMON CAP_SYSLOG"
              % (k, kv.get("record-" + k)))
    check(kv.get("record-NoNewPrivs") == ["1"], "schedhot-record NoNewPrivs")
    check(kv.get("record-stopped") == ["success 0"], "systemctl stop: Result=success, exit 0: %s" % kv.get("record-stopped"))
    files = {}
    for v in kv.get("file", []):
        path, owner, js = v.split(" ", 2)
        files[path] = (owner, json.loads(js) if js.startswith("{") else None)
    names = sorted(files)
    check(names == ["/var/lib/schedhot/record.shot", "/var/lib/schedhot/record.shot.1", "/var/lib/schedhot/record.shot.2"],
          "rotated into record.shot, .1 and .2 (SCHEDHOT_ROTATE=2): %s" % names)
    for path, (owner, info) in sorted(files.items()):
        ok = info and info["integrity"]["complete"] and info["integrity"]["damage"] is None and \
            info["integrity"]["samples"] >= 2 and sorted(p["name"] for p in info["probes"] if p["status"] == "attached") == want_probes
        check(bool(ok) and owner == str(uid), "%s (uid %s): closed, undamaged, %s samples, the probes root attaches here %s"
              % (path, owner, info and info["integrity"]["samples"], want_probes))
    check(kv.get("serve-active") == ["active"], "schedhot-serve.service active: %s" % kv.get("serve-active"))
    suid = int((kv.get("serve-Uid") or ["0"])[0].split()[0])
    check(61184 <= suid <= 65519 and kv.get("serve-CapEff") == [caps], "schedhot-serve: dynamic user %d, CapEff %s"
          % (suid, kv.get("serve-CapEff")))
    served = sorted(set(re.findall(r'schedhot_probe_info\{[^}]*probe="(\w+)"[^}]*attached="true"', " ".join(kv.get("metrics", [])))))
    check(served and served == want_probes, "schedhot-serve on 127.0.0.1:9870: the probes root attaches: %s" % served)
    check(kv.get("serve-stopped") == ["success"], "schedhot-serve stopped: %s" % kv.get("serve-stopped"))
    if failures:
        print("\n".join(l for l in res.splitlines() if l.startswith("journal"))[-3000:])
    os.unlink(os.path.join(boot, "etc/systemd/system/multi-user.target.wants/check.service"))
    st = os.path.join(boot, "var/lib/private/schedhot")
    check(os.path.isdir(st) and os.path.islink(os.path.join(boot, "var/lib/schedhot")),
          "systemd made /var/lib/private/schedhot and the /var/lib/schedhot link")
    r = in_root(boot, "dpkg --purge schedhot")
    check(r.returncode == 0 and not os.path.lexists(st) and not os.path.lexists(os.path.join(boot, "var/lib/schedhot")),
          "dpkg --purge removes the recordings systemd's DynamicUser left (%d)" % r.returncode)
    shutil.rmtree(boot, ignore_errors=True)
    print("units under systemd-nspawn: %.0f s" % (time.time() - t))


def main():
    build, src = (os.path.abspath(a) for a in sys.argv[1:3])
    if os.geteuid() != 0:
        print("SKIP: needs root (dpkg -i into a chroot)")
        return 77
    t_all = time.time()
    version = re.search(r"^project\(schedhot VERSION ([0-9.]+)", open(os.path.join(src, "CMakeLists.txt")).read(),
                        re.M).group(1)

    # ---- 1. the package ----
    out = os.path.join(build, "deb")
    t = time.time()
    r = run([os.path.join(src, "packaging", "build-deb.sh"), out], timeout=1800)
    t_deb = time.time() - t
    print(r.stdout.strip())
    check(r.returncode == 0, "packaging/build-deb.sh: dpkg-buildpackage and lintian --fail-on error (%d: %s)"
          % (r.returncode, r.stderr.strip()[-1500:]))
    deb = os.path.join(out, "schedhot_%s_amd64.deb" % version)
    if not os.path.exists(deb):
        check(False, "%s built" % deb)
        return 1
    lint = open(os.path.join(out, "lintian.txt")).read().splitlines()
    check(not [l for l in lint if l.startswith("E:")], "lintian: no error")
    print("lintian warnings: %s" % ([l for l in lint if l.startswith("W:")] or "none"))
    check(field(deb, "Version") == version, "package version %s = CMakeLists.txt's %s" % (field(deb, "Version"), version))
    depends = field(deb, "Depends")
    check(all(re.search(r"\b%s\b" % d, depends) for d in ("libbpf1", "libc6", "libstdc\\+\\+6", "libzstd1", "python3")),
          "Depends computed by dpkg-shlibdeps: %s" % depends)

    # ---- 2. the clean root ----
    t = time.time()
    tar, cold = base_tarball(deb)
    if not tar:
        return 1
    root = os.path.join(build, "pkg-root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    r = run(["tar", "-C", root, "-xf", tar])
    check(r.returncode == 0, "base tarball unpacked (%s)" % r.stderr.strip())
    t_base = time.time() - t
    before = tree(root)
    check(not any(p.startswith("usr/bin/schedhot") for p in before), "the clean root has no schedhot")
    shutil.copy(deb, os.path.join(root, "tmp"))
    pkg = "/tmp/" + os.path.basename(deb)

    # ---- 3. install and use it ----
    t = time.time()
    r = in_root(root, "dpkg -i %s" % pkg)
    check(r.returncode == 0, "dpkg -i %s (%d: %s)" % (os.path.basename(deb), r.returncode, (r.stdout + r.stderr).strip()[-800:]))
    r = in_root(root, "command -v schedhot; schedhot --version")
    check(r.stdout.split() == ["/usr/bin/schedhot", version], "schedhot --version: %r" % r.stdout)
    ex = "/usr/share/doc/schedhot/examples/vm-7.3.shot"
    r = in_root(root, "schedhot info %s" % ex)
    check(r.returncode == 0 and "end        clean (END frame)" in r.stdout and re.search(r"kernel 7\.3", r.stdout),
          "schedhot info on the shipped recording: %s" % (r.stdout.strip()[:300] or r.stderr.strip()))
    r = in_root(root, "schedhot report --json %s" % ex)
    check(r.returncode == 0 and '"schema": "schedhot.report/1"' in r.stdout, "schedhot report --json of it (%d)" % r.returncode)
    r = in_root(root, "man -w schedhot schedhot-fleet; MANWIDTH=100 man schedhot | col -b; man schedhot-fleet | col -b",
                env={"MANPAGER": "cat", "MAN_DISABLE_SECCOMP": "1"})
    check(r.stdout.startswith("/usr/share/man/man1/schedhot.1.gz\n/usr/share/man/man1/schedhot-fleet.1.gz\n"),
          "man -w: the pages in /usr/share/man/man1: %r" % r.stdout[:120])
    check("schedhot record [OPTIONS]" in r.stdout and "PRIVILEGES" in r.stdout and "--max-size MAX_SIZE" in r.stdout,
          "man schedhot shows the page (commands, options, PRIVILEGES)")
    check(re.search(r"NAME\n\s+schedhot-fleet\s+-\s+run schedhot on many hosts", r.stdout) is not None,
          "man schedhot-fleet shows the page")
    bash = r'''
. /usr/share/bash-completion/bash_completion
__load_completion schedhot && complete -p schedhot
compopt() { :; }
c() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
      _schedhot schedhot "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; echo "${COMPREPLY[*]}"; }
c schedhot rec
c schedhot record --probes cpupri_s
c schedhot info /usr/share/doc/schedhot/examples/vm
'''
    r = in_root(root, "bash -c '%s'" % bash.replace("'", "'\\''"))
    want = ["complete -F _schedhot schedhot", "record", "cpupri_set", ex]
    check(r.stdout.splitlines() == want, "bash completion loaded from /usr/share/bash-completion/completions: %r%s"
          % (r.stdout.splitlines(), "" if r.stdout.splitlines() == want else " (want %r; %s)" % (want, r.stderr.strip())))
    r = in_root(root, "zsh -fc 'autoload -Uz compinit; compinit -u -D; print -r -- $_comps[schedhot]; whence -v _schedhot'")
    check(r.stdout.split("\n")[0] == "_schedhot" and "vendor-completions/_schedhot" in r.stdout,
          "zsh compinit finds _schedhot in vendor-completions: %r" % r.stdout)
    r = in_root(root, "schedhot-fleet --help")
    check(r.returncode == 0 and "preflight" in r.stdout, "schedhot-fleet --help (%d: %s)" % (r.returncode, r.stderr.strip()))
    r = in_root(root, "systemd-analyze verify schedhot-record.service schedhot-serve.service")
    check(r.returncode == 0 and (r.stdout + r.stderr).strip() == "",
          "systemd-analyze verify of the installed units (%d: %s)" % (r.returncode, (r.stdout + r.stderr).strip()))
    r = in_root(root, "dpkg-query -W -f='${Conffiles}\n' schedhot; dpkg -L schedhot")
    check(re.search(r"^ /etc/default/schedhot [0-9a-f]{32}$", r.stdout, re.M) is not None,
          "/etc/default/schedhot is a conffile")
    for p in ("/usr/bin/schedhot", "/usr/bin/schedhot-fleet", "/lib/systemd/system/schedhot-record.service",
              "/lib/systemd/system/schedhot-serve.service", "/usr/share/bash-completion/completions/schedhot",
              "/usr/share/zsh/vendor-completions/_schedhot", "/usr/share/man/man1/schedhot.1.gz"):
        check(re.search(r"^%s$" % re.escape(p), r.stdout, re.M) is not None, "dpkg -L: %s" % p)
    # issue 28 item 1: no library of schedhot's own to load (serve's TLS bridges ran from the
    # build tree), no search path, and no build-tree path in the installed binary
    check(not re.search(r"^/usr/lib/schedhot", r.stdout, re.M), "dpkg -L: nothing in /usr/lib/schedhot")
    stage = os.path.join(out, "schedhot-%s" % version)
    problems = binary_path_problems(os.path.join(root, "usr/bin/schedhot"),
                                    [stage, os.path.join(stage, "obj-x86_64-linux-gnu"), build, src, "obj-x86_64-linux-gnu"])
    check(not problems, "/usr/bin/schedhot: no RPATH/RUNPATH, no build-tree path (readelf -d, strings -a)%s"
          % "".join("\n     " + p for p in problems))
    r = in_root(root, "ldd /usr/bin/schedhot")
    check(r.returncode == 0 and "not found" not in r.stdout and "libmicrohttpd.so.12" in r.stdout and "libcivetweb" not in r.stdout
          and "libssl" not in r.stdout,
          "ldd /usr/bin/schedhot: every library found, libmicrohttpd, no civetweb or OpenSSL: %s"
          % " ".join(ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()))

    # ---- 4. the units under systemd, in a copy of the root booted with systemd-nspawn ----
    boot_units(root, build, version)

    # ---- 5. purge ----
    # what schedhot-record.service leaves (DynamicUser=yes: the StateDirectory is private)
    os.makedirs(os.path.join(root, "var/lib/private/schedhot"), mode=0o700)
    shutil.copy(os.path.join(root, ex.lstrip("/")), os.path.join(root, "var/lib/private/schedhot/record.shot"))
    os.symlink("private/schedhot", os.path.join(root, "var/lib/schedhot"))
    r = in_root(root, "dpkg --purge schedhot")
    check(r.returncode == 0, "dpkg --purge schedhot (%d: %s)" % (r.returncode, (r.stdout + r.stderr).strip()[-800:]))
    after = tree(root)
    check(after == before, "after the purge, the same files as before dpkg -i; left: %s; gone: %s"
          % (sorted(after - before)[:20], sorted(before - after)[:20]))
    t_root = time.time() - t
    shutil.rmtree(root, ignore_errors=True)
    print("times: deb build %.0f s, clean root %.0f s (%s), install/checks/purge %.0f s, total %.0f s"
          % (t_deb, t_base, "mmdebstrap, cold" if cold else "cached tarball", t_root, time.time() - t_all))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
