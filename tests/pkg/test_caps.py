#!/usr/bin/env python3
"""The units' capability set, proven on this kernel (label pkg; root, BPF).

Usage: test_caps.py SCHEDHOT RECORD_UNIT SERVE_UNIT

Reads AmbientCapabilities= and CapabilityBoundingSet= of both units (they must agree) and
runs the real schedhot as `nobody` holding exactly those capabilities, through setpriv
(ambient, inheritable, permitted and bounding sets; no supplementary groups):
  - the child's CapEff and CapBnd are exactly the unit's set;
  - `schedhot probes --json` attaches the same probes as root does;
  - the record unit's own command line (ExecStart= with its Environment= defaults:
    --probes all, rotation, -d 0) records until SIGTERM (a closed file, every sample, the
    same probes attached), also with RLIMIT_MEMLOCK 0 (BPF memory is charged to the
    memory cgroup on >= 5.11, so CAP_SYS_RESOURCE is not needed), without tracefs or
    debugfs (tracepoints attach by name);
  - the serve unit's command line serves /metrics with the probes attached;
  - without CAP_BPF or CAP_PERFMON, record exits 1 with the one line naming it and writes
    no file; without CAP_SYSLOG it records, and the probes it then loses (kallsyms addresses
    hidden: ilb_kick on this 6.18) name CAP_SYSLOG in their reason.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from checks import check, failures, finish, run

CAP_BITS = {"CAP_SYSLOG": 34, "CAP_PERFMON": 38, "CAP_BPF": 39}



def unit_caps(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + "="):
                return sorted(line.split("=", 1)[1].split())
    return None


def setpriv(caps, argv, memlock=None):
    """argv as nobody with exactly caps (names like CAP_BPF) in every set."""
    spec = ",".join(["-all"] + ["+" + c[4:].lower() for c in caps])
    pre = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
           "--inh-caps=" + spec, "--ambient-caps=" + spec, "--bounding-set=" + spec, "--"]
    if memlock is not None:
        pre = ["prlimit", "--memlock=%d:%d" % (memlock, memlock), "--"] + pre
    return pre + argv


def unit_command(path, schedhot, replace):
    """A unit's ExecStart= as systemd runs it with the unit's Environment= (no EnvironmentFile):
    ${VAR} one word, $VAR split into words; its program replaced by SCHEDHOT, words by REPLACE."""
    env, cmd = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("Environment="):
                env.update(kv.split("=", 1) for kv in line.split("=", 1)[1].split())
            elif line.startswith("ExecStart="):
                cmd = line.split("=", 1)[1].split()
    argv = [schedhot]
    for w in cmd[1:]:
        if re.fullmatch(r"\$\w+", w):
            argv += env[w[1:]].split()
        else:
            argv.append(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], w))
    return [replace.get(a, a) for a in argv]



def attached(probes_json):
    return sorted(p["probe"] for p in json.loads(probes_json)["probes"] if p["attached"])


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: test_caps.py SCHEDHOT RECORD_UNIT SERVE_UNIT")
    schedhot, record_unit, serve_unit = sys.argv[1:]
    if os.geteuid() != 0:
        print("SKIP: needs root (setpriv to nobody with capabilities)")
        return 77
    caps = unit_caps(record_unit, "AmbientCapabilities")
    check(caps == ["CAP_BPF", "CAP_PERFMON", "CAP_SYSLOG"], "record unit's ambient set: %s" % caps)
    for unit in (record_unit, serve_unit):
        for key in ("AmbientCapabilities", "CapabilityBoundingSet"):
            check(unit_caps(unit, key) == caps, "%s %s = %s" % (os.path.basename(unit), key, unit_caps(unit, key)))
    want = sum(1 << CAP_BITS[c] for c in caps)

    tmp = tempfile.mkdtemp(prefix="schedhot-caps-")
    os.chmod(tmp, 0o1777)
    # The child holds exactly the set, as nobody.
    r = run(setpriv(caps, ["grep", "-E", "^(Uid|CapEff|CapPrm|CapBnd|CapAmb):", "/proc/self/status"]))
    st = dict(re.findall(r"^(\w+):\s+(\S+)", r.stdout, re.M))
    check(st.get("Uid") == "65534", "runs as nobody (uid %s)" % st.get("Uid"))
    for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        check(int(st.get(k, "-1"), 16) == want, "%s = %s, exactly %s" % (k, st.get(k), " ".join(caps)))

    # Which probes attach: the same as root.
    root_p = run([schedhot, "probes", "--json"])
    check(root_p.returncode == 0, "root: probes --json exits 0 (%d: %s)" % (root_p.returncode, root_p.stderr.strip()))
    user_p = run(setpriv(caps, [schedhot, "probes", "--json"]))
    check(user_p.returncode == 0, "nobody+caps: probes --json exits 0 (%d: %s)" % (user_p.returncode, user_p.stderr.strip()))
    root_set = attached(root_p.stdout) if root_p.returncode == 0 else []
    user_set = attached(user_p.stdout) if user_p.returncode == 0 else None
    check(len(root_set) > 0, "root attaches probes here: %s" % root_set)
    check(user_set == root_set, "nobody+caps attaches the same probes as root: %s" % user_set)

    # The units' own command lines (ExecStart= with their Environment= defaults), as nobody
    # with the set: record until SIGTERM (systemctl stop), also with RLIMIT_MEMLOCK 0 (memlock
    # is no reason for CAP_SYS_RESOURCE); serve answering /metrics.
    for memlock in (None, 0):
        out = os.path.join(tmp, "rec-%s.shot" % memlock)
        argv = unit_command(record_unit, schedhot, {"/var/lib/schedhot/record.shot": out})
        what = "nobody+caps%s, the record unit's command" % ("" if memlock is None else ", RLIMIT_MEMLOCK 0")
        rec = subprocess.Popen(setpriv(caps, argv, memlock=memlock), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        time.sleep(3.5)
        rec.terminate()
        _, rerr = rec.communicate(timeout=30)
        check(rec.returncode == 0, "%s (%s) stopped by SIGTERM: exit 0 (%s: %s)"
              % (what, " ".join(argv[1:]), rec.returncode, rerr.strip()))
        if not os.path.exists(out):
            check(False, "%s: %s written" % (what, out))
            continue
        check(os.stat(out).st_uid == 65534, "%s: the recording is nobody's" % what)
        info = json.loads(run([schedhot, "info", "--json", out]).stdout)
        integ = info["integrity"]
        check(integ["complete"] and integ["damage"] is None, "%s: recording closed, undamaged" % what)
        check(4 <= integ["samples"] <= 6, "%s: the baseline, a sample a second and one at SIGTERM: %d"
              % (what, integ["samples"]))
        rec_set = sorted(p["name"] for p in info["probes"] if p["status"] == "attached")
        check(rec_set == root_set, "%s: recorded with the probes root attaches: %s" % (what, rec_set))

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = unit_command(serve_unit, schedhot, {"127.0.0.1:9870": "127.0.0.1:%d" % port})
    srv = subprocess.Popen(setpriv(caps, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    body = ""
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as resp:
                    body = resp.read().decode()
                if "schedhot_probe_info" in body:
                    break
            except OSError:
                pass
            if srv.poll() is not None:
                break
            time.sleep(0.2)
    finally:
        srv.terminate()
        _, serr = srv.communicate(timeout=30)
    served = sorted(set(re.findall(r'schedhot_probe_info\{[^}]*probe="(\w+)"[^}]*attached="true"', body)))
    check(served == root_set, "nobody+caps, the serve unit's command: /metrics has the probes root attaches: %s%s"
          % (served, "" if body else " (no answer; stderr: %s)" % serr.strip()))
    check(srv.returncode == 0, "nobody+caps: serve exits 0 on SIGTERM (%s)" % srv.returncode)

    # One capability fewer. CAP_BPF or CAP_PERFMON: nothing loads, one line naming it, exit 1,
    # no file. CAP_SYSLOG: it records, and each probe that root attaches but this user
    # cannot (kallsyms addresses hidden) names CAP_SYSLOG in its reason.
    for drop in caps:
        rest = [c for c in caps if c != drop]
        out = os.path.join(tmp, "without-%s.shot" % drop)
        r = run(setpriv(rest, [schedhot, "record", "-d", "1", "-q", "-o", out]))
        if drop in ("CAP_BPF", "CAP_PERFMON"):
            line = "schedhot: needs root, or CAP_BPF and CAP_PERFMON (missing: %s); run it with sudo\n" % drop
            check(r.returncode == 1, "without %s: record exits 1 (%d)" % (drop, r.returncode))
            check(r.stderr == line, "without %s: stderr is the one line %r: %r" % (drop, line, r.stderr))
            check(not os.path.exists(out), "without %s: no file written" % drop)
            continue
        check(r.returncode == 0 and os.path.exists(out), "without %s: record exits 0 (%d: %s)"
              % (drop, r.returncode, r.stderr.strip()))
        p = run(setpriv(rest, [schedhot, "probes", "--json"]))
        j = json.loads(p.stdout)
        lost = {q["probe"]: q["reason"] for q in j["probes"] if q["probe"] in root_set and not q["attached"]}
        if j["kallsyms"] == "ok":
            print("note: kallsyms addresses are visible without %s here (kernel.perf_event_paranoid <= 1)" % drop)
            check(not lost, "without %s: nothing lost when kallsyms shows addresses: %s" % (drop, lost))
        else:
            check("without %s" % drop in j["kallsyms"], "without %s: kallsyms says so: %s" % (drop, j["kallsyms"]))
            check(all(drop in why for why in lost.values()), "without %s: each probe lost names it: %s" % (drop, lost))
            print("without %s: probes lost on this kernel: %s" % (drop, sorted(lost)))

    subprocess.run(["rm", "-rf", tmp])
    return finish()


if __name__ == "__main__":
    sys.exit(main())
