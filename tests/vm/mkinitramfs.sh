#!/usr/bin/env bash
# mkinitramfs.sh -o OUT.cpio.gz -i INIT_SCRIPT [-f HOSTPATH:GUESTPATH]... [-b BUSYBOX [-l APPLETS]]
#
# -l APPLETS: the applet list (`busybox --list-full` output) of a BUSYBOX that cannot run
# here (another architecture's: build-static-arm64.sh writes one); otherwise BUSYBOX lists it.
# Builds a gzip'ed newc initramfs containing:
#   /bin/busybox (static) + a symlink per applet, /proc /sys /dev /tmp /run /root /etc,
#   /dev/console and /dev/null nodes, /lib/schedhot/guest-lib.sh (this dir's guest-lib.sh),
#   every -f HOSTPATH:GUESTPATH (a file keeps its mode; a directory is copied recursively),
#   INIT_SCRIPT as /init (mode 0755).
# No kernel modules: the Debian cloud kernels have tracefs, bpf, devtmpfs, the 8250 serial
# console and initramfs support built in.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
die() { echo "mkinitramfs: error: $*" >&2; exit 1; }

OUT='' INIT='' BUSYBOX=${SCHEDHOT_BUSYBOX:-} APPLETS=''
FILES=()
while getopts "o:i:f:b:l:h" opt; do
    case "$opt" in
        o) OUT=$OPTARG ;;
        i) INIT=$OPTARG ;;
        f) FILES+=("$OPTARG") ;;
        b) BUSYBOX=$OPTARG ;;
        l) APPLETS=$OPTARG ;;
        h) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
        *) die "bad option (see -h)" ;;
    esac
done
[ -n "$OUT" ] || die "-o OUT.cpio.gz is required"
[ -n "$INIT" ] || die "-i INIT_SCRIPT is required"
[ -f "$INIT" ] || die "init script '$INIT' not found"
command -v python3 >/dev/null || die "python3 not found"

if [ -z "$BUSYBOX" ]; then
    for b in /bin/busybox /usr/bin/busybox; do [ -x "$b" ] && { BUSYBOX=$b; break; }; done
fi
[ -n "$BUSYBOX" ] && [ -x "$BUSYBOX" ] || die "busybox not found (apt-get install busybox-static)"
[ -z "$APPLETS" ] || [ -s "$APPLETS" ] || die "applet list '$APPLETS' is missing or empty"
if command -v file >/dev/null && ! file -L "$BUSYBOX" | grep -q 'statically linked'; then
    die "$BUSYBOX is not statically linked (apt-get install busybox-static)"
fi

LIST=$(mktemp); trap 'rm -f "$LIST"' EXIT

parents() {   # emit dir entries for every parent of guest path $1
    local p=$1 acc=""
    p=${p#/}; p=${p%/*}
    [ "$p" = "${1#/}" ] && return 0
    local IFS=/
    for c in $p; do acc="$acc/$c"; echo "dir $acc 0755"; done
}

{
    for d in /bin /sbin /usr /usr/bin /usr/sbin /proc /sys /dev /tmp /run /root /etc /mnt /lib /lib/schedhot; do
        echo "dir $d 0755"
    done
    echo "nod /dev/console 0600 c 5 1"
    echo "nod /dev/null 0666 c 1 3"
    echo "file /bin/busybox $BUSYBOX 0755"
    if [ -n "$APPLETS" ]; then cat "$APPLETS"; else "$BUSYBOX" --list-full; fi | while read -r a; do
        [ "$a" = bin/busybox ] && continue
        parents "/$a"
        echo "slink /$a /bin/busybox 0777"
    done
    echo "file /lib/schedhot/guest-lib.sh $HERE/guest-lib.sh 0644"
    for spec in ${FILES[@]+"${FILES[@]}"}; do
        host=${spec%%:*}; guest=${spec#*:}
        [ "$host" != "$spec" ] && [ -n "$guest" ] || die "-f wants HOSTPATH:GUESTPATH, got '$spec'"
        case "$guest" in /*) ;; *) die "guest path '$guest' must be absolute" ;; esac
        [ -e "$host" ] || die "'$host' not found"
        case "$spec" in *[[:space:]]*) die "paths with whitespace are not supported: '$spec'" ;; esac
        parents "$guest"
        if [ -d "$host" ]; then
            echo "dir $guest 0755"
            (cd "$host" && find . -mindepth 1 | sort) | while read -r rel; do
                rel=${rel#./}
                if [ -L "$host/$rel" ]; then echo "slink $guest/$rel $(readlink "$host/$rel") 0777"
                elif [ -d "$host/$rel" ]; then echo "dir $guest/$rel 0755"
                else echo "file $guest/$rel $host/$rel $(stat -c %a "$host/$rel")"; fi
            done
        else
            echo "file $guest $(readlink -f "$host") $(stat -L -c %a "$host")"
        fi
    done
    echo "file /init $(readlink -f "$INIT") 0755"
} > "$LIST"

mkdir -p "$(dirname "$OUT")"
python3 "$HERE/newc.py" "$LIST" "$OUT" || die "cpio build failed"
echo "mkinitramfs: $OUT ($(du -k "$OUT" | cut -f1) KiB)" >&2
