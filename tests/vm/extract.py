#!/usr/bin/env python3
"""extract.py LOG OUTDIR: pull every file emitted by guest-lib.sh's emit_file/emit_text
out of a serial console log into OUTDIR/NAME.

Each block is verified: strict base64, and the size and sha256 of its META line
(of the original bytes; bodies marked enc=gzip are decompressed first).
Exit status: 0 all blocks good; 1 a block is truncated (BEGIN without END), corrupt,
or was reported missing by the guest; 2 usage error. With --list, only print
NAME SIZE STATUS per block. --require NAME (repeatable) fails when NAME is absent.
"""
import base64
import binascii
import gzip
import hashlib
import os
import re
import sys
import zlib

BEGIN = re.compile(r"=====SCHEDHOT-FILE-BEGIN (\S+)=====")
META = re.compile(r"=====SCHEDHOT-FILE-META (\S+) size=(\d+) sha256=([0-9a-f]{64})( enc=gzip)?=====")
END = re.compile(r"=====SCHEDHOT-FILE-END (\S+)=====")
MISSING = re.compile(r"=====SCHEDHOT-FILE-MISSING (\S+)=====")
B64LINE = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
SAFE = re.compile(r"^[A-Za-z0-9._+-]+$")


def main(argv):
    args = argv[1:]
    list_only = False
    required = []
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--list":
            list_only = True
        elif a == "--require" and i + 1 < len(args):
            required.append(args[i + 1])
            i += 1
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            pos.append(a)
        i += 1
    if len(pos) != (1 if list_only else 2):
        sys.stderr.write("usage: extract.py [--require NAME]... LOG OUTDIR | extract.py --list LOG\n")
        return 2
    log = pos[0]
    outdir = None if list_only else pos[1]
    try:
        with open(log, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        sys.stderr.write("extract: error: cannot read %s: %s\n" % (log, e))
        return 2
    if outdir:
        os.makedirs(outdir, exist_ok=True)

    errors = []
    got = {}
    cur = None  # [name, meta, lines, start_line]
    for ln, raw in enumerate(text.split("\n"), 1):
        line = raw.replace("\r", "")
        m = BEGIN.search(line)
        if m:
            if cur:
                errors.append("%s: truncated block (BEGIN at line %d, new BEGIN at line %d)" % (cur[0], cur[3], ln))
            cur = [m.group(1), None, [], ln]
            continue
        m = MISSING.search(line)
        if m and not cur:
            errors.append("%s: guest reported the file missing (line %d)" % (m.group(1), ln))
            continue
        if cur is None:
            continue
        m = META.search(line)
        if m and m.group(1) == cur[0] and cur[1] is None and not cur[2]:
            cur[1] = (int(m.group(2)), m.group(3), bool(m.group(4)))
            continue
        m = END.search(line)
        if m:
            name, meta, lines, start = cur
            cur = None
            if m.group(1) != name:
                errors.append("%s: END marker names %s (line %d)" % (name, m.group(1), ln))
                continue
            body = "".join(l.strip() for l in lines)
            bad = [l for l in lines if not B64LINE.match(l.strip())]
            if bad:
                errors.append("%s: %d non-base64 line(s) in block at line %d (console interleaving?), first: %r"
                              % (name, len(bad), start, bad[0][:80]))
                continue
            try:
                data = base64.b64decode(body, validate=True)
            except (binascii.Error, ValueError) as e:
                errors.append("%s: bad base64 (block at line %d): %s" % (name, start, e))
                continue
            if meta is None:
                errors.append("%s: no META line (block at line %d)" % (name, start))
                continue
            size, digest, gz = meta
            if gz:
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError, zlib.error) as e:
                    errors.append("%s: bad gzip body (block at line %d): %s" % (name, start, e))
                    continue
            if len(data) != size:
                errors.append("%s: size %d != %d announced (block at line %d)" % (name, len(data), size, start))
                continue
            if hashlib.sha256(data).hexdigest() != digest:
                errors.append("%s: sha256 mismatch (block at line %d)" % (name, start))
                continue
            if not SAFE.match(name) or name in (".", ".."):
                errors.append("%s: unsafe file name" % name)
                continue
            if name in got:
                sys.stderr.write("extract: warning: %s emitted more than once; keeping the last\n" % name)
            got[name] = data
            continue
        cur[2].append(line)
    if cur:
        errors.append("%s: truncated block (BEGIN at line %d, no END before end of log)" % (cur[0], cur[3]))

    for name, data in sorted(got.items()):
        if list_only:
            print("%s %d ok" % (name, len(data)))
        else:
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(data)
    for r in required:
        if r not in got:
            errors.append("%s: required file not found in the log" % r)
    for e in errors:
        sys.stderr.write("extract: error: %s\n" % e)
    if not list_only:
        sys.stderr.write("extract: %d file(s) written to %s%s\n" % (len(got), outdir, ", %d error(s)" % len(errors) if errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
