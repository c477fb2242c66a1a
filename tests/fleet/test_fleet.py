#!/usr/bin/python3
"""schedhot-fleet against real sshd instances on 127.0.0.1 (label fleet).

Usage: test_fleet.py SCHEDHOT_DIR (the build directory: its schedhot; the script from the
source tree), or test_fleet.py FLEET_SCRIPT SCHEDHOT_BIN.

Each host alias (h1, h2, ...) in a generated ssh_config maps to an sshd started here
(`sshd -D -f <config>` on a free loopback port, temp host key, only the test's user key);
each sshd sets PATH for its sessions, so one host's `schedhot` is the build's binary and
another has none. The user's ~/.ssh is never read (-F the generated config, its own
known_hosts). Failing on purpose: unknown host key, refused key, unreachable port,
schedhot missing, a hostile host name."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

if len(sys.argv) == 2:
    schedhot = os.path.join(os.path.abspath(sys.argv[1]), "schedhot")
    fleet = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "fleet", "schedhot-fleet")
else:
    fleet, schedhot = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


if os.geteuid() != 0:
    print("SKIP: needs root (sshd, BPF)")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="schedhot-fleet-")
procs = []
try:
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    key = lambda name: subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(tmp, name)],
                                      check=True)
    for k in ("hostkey", "otherhostkey", "userkey", "strangerkey"):
        key(k)
    shutil.copy(os.path.join(tmp, "userkey.pub"), os.path.join(tmp, "authorized_keys"))
    good_bin = os.path.join(tmp, "bin-good")
    empty_bin = os.path.join(tmp, "bin-empty")
    os.makedirs(good_bin)
    os.makedirs(empty_bin)
    os.symlink(schedhot, os.path.join(good_bin, "schedhot"))

    def sshd(name, bindir):
        port = free_port()
        cfg = os.path.join(tmp, "sshd_%s.conf" % name)
        with open(cfg, "w") as f:
            f.write("ListenAddress 127.0.0.1\nPort %d\nHostKey %s\nAuthorizedKeysFile %s\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                    "PermitRootLogin prohibit-password\nStrictModes no\nPidFile %s\n"
                    "Subsystem sftp /usr/lib/openssh/sftp-server\n"
                    "SetEnv PATH=%s:/usr/bin:/bin\n"
                    % (port, os.path.join(tmp, "hostkey"), os.path.join(tmp, "authorized_keys"),
                       os.path.join(tmp, "sshd_%s.pid" % name), bindir))
        p = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", cfg], stderr=open(os.path.join(tmp, name + ".log"), "w"))
        procs.append(p)
        for _ in range(100):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        return port

    p_good = sshd("good", good_bin)
    p_empty = sshd("empty", empty_bin)
    p_dead = free_port()  # nothing listens there
    # known_hosts: the one host key under the alias [127.0.0.1]:port of each live sshd
    pub = open(os.path.join(tmp, "hostkey.pub")).read().split()
    with open(os.path.join(tmp, "known_hosts"), "w") as f:
        for p in (p_good, p_empty, p_dead):
            f.write("[127.0.0.1]:%d %s %s\n" % (p, pub[0], pub[1]))
    hosts = {"h1": (p_good, "userkey", "known_hosts"), "h2": (p_good, "userkey", "known_hosts"),
             "h3": (p_good, "userkey", "empty_known_hosts"),    # host key unknown
             "h4": (p_good, "strangerkey", "known_hosts"),       # key refused
             "h5": (p_dead, "userkey", "known_hosts"),           # unreachable
             "h6": (p_empty, "userkey", "known_hosts")}          # schedhot missing
    open(os.path.join(tmp, "empty_known_hosts"), "w").close()
    sshcfg = os.path.join(tmp, "ssh_config")
    with open(sshcfg, "w") as f:
        for h, (port, k, kh) in hosts.items():
            f.write("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n"
                    "  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  GlobalKnownHostsFile /dev/null\n"
                    % (h, port, os.path.join(tmp, k), os.path.join(tmp, kh)))
    out = os.path.join(tmp, "fleet")
    canary = os.path.join(tmp, "canary")
    open(canary, "w").close()
    hostile = "a;rm -rf %s" % canary
    base = [fleet, "-o", out, "-F", sshcfg, "--connect-timeout", "5", "-t", "30", "--start-delay", "2",
            "-d", "2", "-i", "500ms", "--local-schedhot", schedhot]

    t0 = time.time()
    r = subprocess.run(base + ["run", "-w", "h[1-6]", "-w", hostile], capture_output=True, text=True)
    print(r.stderr)
    check(r.returncode == 1, "exit 1 when hosts failed (got %d)" % r.returncode)
    check(os.path.exists(canary), "the hostile host name ran nothing")
    check("a;rm -rf %s: bad host name" % canary in r.stderr, "the hostile name is a failed host")
    want = {"h3": "host key unknown", "h4": "authentication refused", "h5": "unreachable", "h6": "schedhot missing"}
    fleetj = json.load(open(os.path.join(out, "fleet.json")))
    for h, name in want.items():
        st = json.load(open(os.path.join(out, h, "state.json")))
        got = (st.get("failure") or {}).get("name")
        check(got == name, "%s fails as %r (got %r: %s)" % (h, name, got, st.get("failure")))
        check(fleetj["failed"].get(h, {}).get("name") == name, "fleet.json names %s's failure" % h)
    starts = []
    for h in ("h1", "h2"):
        st = json.load(open(os.path.join(out, h, "state.json")))
        check(st["failure"] is None and st["steps"]["check"]["ok"], "%s has a complete checked recording" % h)
        info = json.loads(subprocess.run([schedhot, "info", "--json", os.path.join(out, h, "recording.shot")],
                                         capture_output=True, text=True, check=True).stdout)
        check(info["integrity"]["complete"] and not info["integrity"]["damage"] and info["integrity"]["samples"] >= 4,
              "%s's recording is closed, undamaged, >= 4 samples (%s)" % (h, info["integrity"]["samples"]))
        starts.append(info["start_wall_ns"] / 1e9)
        check(abs(starts[-1] - st["steps"]["record"]["start_at"]) < 0.2,
              "%s started at the common --start-at (%.3f vs %d)" % (h, starts[-1], st["steps"]["record"]["start_at"]))
    rf = [json.load(open(os.path.join(out, h, "state.json")))["steps"]["record"]["remote_file"] for h in ("h1", "h2")]
    check(rf[0] != rf[1], "hosts sharing a machine record to different remote files (%s)" % rf)
    check(sorted(fleetj["complete"]) == ["h1", "h2"], "fleet.json: h1 and h2 complete")

    # Resume: nothing left to re-record for h1/h2 (their files stay as they are).
    m1 = os.path.getmtime(os.path.join(out, "h1", "recording.shot"))
    r2 = subprocess.run(base + ["record", "-w", "h[1-2]"], capture_output=True, text=True)
    check(r2.returncode == 0, "a re-run over complete hosts exits 0 (%d: %s)" % (r2.returncode, r2.stderr.strip()))
    check(os.path.getmtime(os.path.join(out, "h1", "recording.shot")) == m1, "h1 is not re-recorded")
    for f in rf:
        if os.path.exists(f):
            os.unlink(f)
    print("elapsed %.1f s" % (time.time() - t0))
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
    if failures:
        print("kept", tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
