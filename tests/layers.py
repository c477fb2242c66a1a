#!/usr/bin/python3
"""The layer map of src/README.md, enforced: every `#include "DIR/..."` in src/<layer>/ (and
its subdirectories) must name a directory the layer's row of the map allows, or
include/schedhot/ (the BPF ABI: any layer but sys). The map is read from the README's table
("| directory | may include |"), so the README and the code cannot drift apart: a layer
missing from the table, a table row naming no src/ directory, or a forbidden include fails.
Usage: layers.py SRC_DIR (exit 0 clean, 1 with one line per violation)."""
import os, re, sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
readme = open(os.path.join(src, "README.md")).read()
m = re.search(r"^\| directory \| may include \|\n\|[-| ]+\|\n((?:\|.*\|\n)+)", readme, re.M)
if not m:
    print("src/README.md: no layer map table ('| directory | may include |')")
    sys.exit(1)
allowed = {}
for row in m.group(1).splitlines():
    cells = [c.strip() for c in row.strip("|").split("|")]
    allowed[cells[0]] = set(c for c in cells[1].split() if c != "-")
problems = []
layers = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)) and not d.startswith((".", "_"))
                and any(f.endswith((".cpp", ".h")) for _, _, fs in os.walk(os.path.join(src, d)) for f in fs))
for d in layers:
    if d not in allowed:
        problems.append(f"src/{d}/: not in src/README.md's layer map")
for d in allowed:
    if d not in layers:
        problems.append(f"src/README.md's layer map names '{d}', which is no directory of src/ with sources")
    for dep in allowed[d]:
        if dep not in allowed:
            problems.append(f"src/README.md's layer map: '{d}' may include '{dep}', which has no row")
inc = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)
checked = 0
for d in layers:
    ok = allowed.get(d, set()) | {d} | ({"schedhot"} if d != "sys" else set())
    for root, _, files in os.walk(os.path.join(src, d)):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(root, f)
            text = open(path, encoding="utf-8", errors="replace").read()
            for n, line in enumerate(text.splitlines(), 1):
                mm = inc.match(line)
                if not mm:
                    continue
                checked += 1
                if mm.group(1) not in ok:
                    problems.append(f"{os.path.relpath(path, os.path.dirname(src))}:{n}: includes \"{mm.group(1)}/\", "
                                    f"which src/README.md's layer map does not allow for {d}/")
for p in problems:
    print(p)
print(f"layer map: {len(layers)} layers, {checked} includes checked, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
