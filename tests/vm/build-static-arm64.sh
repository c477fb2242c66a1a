#!/usr/bin/env bash
# build-static-arm64.sh [--refresh] BUILD_DIR: build-static-cross.sh arm64 (the arm64 guests'
# static schedhot, workload, tracecount and busybox; e2e.py and demo.sh call it by this name).
exec "$(dirname "$0")/build-static-cross.sh" arm64 "$@"
