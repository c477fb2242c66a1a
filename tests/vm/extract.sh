#!/usr/bin/env bash
# extract.sh [--require NAME]... LOG OUTDIR: writes every file emitted by guest-lib.sh
# (emit_file / emit_text) in a serial log to OUTDIR, verifying base64, size and sha256.
# Fails (exit 1) on a truncated or corrupt block. See extract.py.
set -euo pipefail
exec python3 "$(cd "$(dirname "$0")" && pwd)/extract.py" "$@"
