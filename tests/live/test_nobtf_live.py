#!/usr/bin/env python3
"""A kernel without BTF, made on this one: `unshare -m` and a tmpfs over /sys/kernel/btf hide
the running kernel's BTF from schedhot alone (nothing else sees the mount). As on Debian's 6.1
ppc64el kernel (built without CONFIG_DEBUG_INFO_BTF; tests/vm/e2e.py's nobtf run, full tier):
- `probes` exits 0, attaches nothing, and says once why (no vmlinux BTF), that nothing can
  attach (every program is CO-RE, kprobes too) and what --btf FILE must be (the BTF of exactly
  this release); each probe's line says "no vmlinux BTF (above)";
- `probes --json` has that reason as btf_error and in every probe's reason, once;
- `record` exits 1 with one line that names it, and leaves no file.
Then `probes --btf /sys/kernel/btf/vmlinux` in the same namespace (the file hidden, so a copy
of it) attaches again: --btf FILE is the way out the message names.

usage: test_nobtf_live.py PATH/TO/schedhot
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from livecheck import check, failures, require_root

SCHEDHOT = sys.argv[1]
require_root()
if not os.path.exists("/sys/kernel/btf/vmlinux") or not shutil.which("unshare"):
    print("SKIP: no /sys/kernel/btf/vmlinux to hide, or no unshare")
    sys.exit(77)

rel = platform.release()
need = (f"give --btf FILE: the BTF of exactly {rel} (raw BTF, or an ELF vmlinux with a .BTF section), e.g. made "
        f"by `pahole --btf_encode_detached=FILE VMLINUX` from its vmlinux with debug info (Debian: "
        f"linux-image-{rel}-dbg); with it the kprobe and raw tracepoint programs load, not fentry or tp_btf ones "
        f"(idle, bcast_wait), which need the kernel's own BTF")

with tempfile.TemporaryDirectory() as tmp:
    btf_copy = os.path.join(tmp, "vmlinux.btf")
    shutil.copyfile("/sys/kernel/btf/vmlinux", btf_copy)
    rec = os.path.join(tmp, "x.shot")
    script = ("mount -t tmpfs none /sys/kernel/btf || exit 9\n"
              f"'{SCHEDHOT}' probes > {tmp}/text 2>&1; echo $? > {tmp}/text.rc\n"
              f"'{SCHEDHOT}' probes --json > {tmp}/json 2> {tmp}/json.err; echo $? > {tmp}/json.rc\n"
              f"'{SCHEDHOT}' record -d 1 -q -o {rec} > {tmp}/rec.out 2> {tmp}/rec.err; echo $? > {tmp}/rec.rc\n"
              f"'{SCHEDHOT}' probes --json --btf {btf_copy} > {tmp}/with 2> {tmp}/with.err; echo $? > {tmp}/with.rc\n")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True, text=True)
    if not check(r.returncode == 0, f"unshare -m + tmpfs over /sys/kernel/btf ({r.returncode}: {r.stderr.strip()})"):
        sys.exit(1)

    def read(name):
        with open(os.path.join(tmp, name), errors="replace") as f:
            return f.read()

    text = read("text")
    print(text[:1500])
    check(read("text.rc").strip() == "0", f"probes exits 0 ({read('text.rc').strip()})")
    lines = text.splitlines()
    check(len(lines) > 1 and lines[0].startswith(f"kernel {rel}  BTF no"), f"first line says BTF no: {lines[:1]}")
    check(text.count("no vmlinux BTF: /sys/kernel/btf/vmlinux not present") == 1 and text.count(need) == 1,
          "the reason and what --btf FILE must be, said once")
    check("nothing can attach" in text and "CO-RE" in text, "says that nothing can attach, and why (CO-RE programs)")
    j = json.loads(read("json"))
    n = len(j["probes"])
    check(f"0 of {n} probes attached" in text, f"0 of {n} probes attached")
    unavailable = [l for l in lines if " UNAVAILABLE " in l]
    check(len(unavailable) == n and all("no vmlinux BTF (above)" in l for l in unavailable),
          f"each of the {n} probes: UNAVAILABLE  no vmlinux BTF (above)")
    check(read("json.rc").strip() == "0" and j["btf"] is False and need in j["btf_error"], "probes --json: btf false, btf_error")
    check(all(not p["attached"] and p["reason"].count(j["btf_error"]) == 1 for p in j["probes"]),
          "every probe unavailable, its reason the btf_error once")
    err = read("rec.err")
    print(err)
    check(read("rec.rc").strip() == "1", f"record exits 1 ({read('rec.rc').strip()})")
    check(err.count("\n") == 1 and err.startswith("schedhot: no probe could attach: no vmlinux BTF") and need in err,
          "record: one line naming the cause and what --btf needs")
    check(not os.path.exists(rec), "record left no file")
    w = json.loads(read("with") or "{}")
    got = sum(1 for p in w.get("probes", []) if p["attached"])
    print(f"with --btf {btf_copy}: {got} of {len(w.get('probes', []))} attached ({read('with.err').strip()[:200]})")
    check(w.get("btf") is True and w.get("btf_error") == "" and got > 0,
          "--btf FILE (a copy of the hidden BTF) attaches again")
sys.exit(1 if failures else 0)
