#!/usr/bin/env bash
# fetch-kernels.sh [--refresh] [6.1|6.12|7.3|6.1-arm64|6.12-arm64|6.1-ppc64le|6.12-ppc64le|all]...
#
# Downloads Debian cloud kernels with `apt-get download` into a cache outside
# git and leaves, per version, $CACHE/kernels/<ver>/ with:
#   vmlinuz, config-<release>, System.map-<release> (Debian ships only a stub;
#   the real map is in the -dbg package), modules.builtin, version (the exact
#   kernel release, e.g. 6.1.0-57-cloud-amd64) and package (name=version).
#
#   6.1  newest linux-image-6.1.0-N-cloud-amd64 that the system's apt knows
#   6.12 the dependency of the linux-image-6.12-cloud-amd64 meta package
#   7.3  newest linux-binary-7.3.*-cloud-amd64 (+ its linux-base-* for the
#        config) from trixie-backports, through a PRIVATE apt configuration
#        under $CACHE/apt-trixie-backports (the system's /etc/apt is untouched)
#   6.1-arm64  newest linux-image-6.1.0-N-cloud-arm64 of bookworm, bookworm-updates and
#        bookworm-security, through a PRIVATE apt configuration with
#        APT::Architecture=arm64 under $CACHE/apt-arm64 (the system's dpkg
#        architecture list and /etc/apt untouched); booted by boot.sh with
#        qemu-system-aarch64 (vmlinuz is arm64's gzip'ed Image)
#   6.12-arm64 the dependency of linux-image-6.12-cloud-arm64 (bookworm-security's
#        6.12.N+deb12 backport), through the same private arm64 configuration; its
#        vmlinuz is arm64's uncompressed Image; BPF trampolines on arm64 since 6.4
#   6.1-ppc64le, 6.12-ppc64le  newest linux-image-6.1.0-N-powerpc64le and the dependency of
#        linux-image-6.12-powerpc64le (bookworm-security), through a PRIVATE configuration
#        with APT::Architecture=ppc64el under $CACHE/apt-ppc64el; "vmlinuz" is then the
#        package's ELF vmlinux (with its symbol table), which qemu-system-ppc64 -M pseries
#        boots as it is
#
# Cache: ${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}. Idempotent: a version
# whose directory is complete is skipped unless --refresh is given.
# Mirror: the Debian mirror named in /etc/apt/sources.list{,.d} (override with
# SCHEDHOT_DEBIAN_MIRROR=http://host/debian).
set -euo pipefail

CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
REFRESH=0
die() { echo "fetch-kernels: error: $*" >&2; exit 1; }
log() { echo "fetch-kernels: $*" >&2; }

usage() { awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit "${1:-0}"; }

VERS=()
for a in "$@"; do
    case "$a" in
        -h|--help) usage 0 ;;
        --refresh) REFRESH=1 ;;
        all) VERS+=(6.1 6.12 7.3) ;;
        6.1|6.12|7.3|6.1-arm64|6.12-arm64|6.1-ppc64le|6.12-ppc64le) VERS+=("$a") ;;
        *) die "unknown argument '$a' (want 6.1, 6.12, 7.3, 6.1-arm64, 6.12-arm64, 6.1-ppc64le, 6.12-ppc64le or all)" ;;
    esac
done
[ ${#VERS[@]} -gt 0 ] || VERS=(6.1 6.12 7.3)

for t in apt-get apt-cache dpkg-deb; do
    command -v "$t" >/dev/null || die "$t not found (this needs a Debian host)"
done
mkdir -p "$CACHE/kernels" "$CACHE/debs" || die "cannot create cache dir $CACHE"

# ---------------------------------------------------------------- mirror
debian_mirror() {
    if [ -n "${SCHEDHOT_DEBIAN_MIRROR:-}" ]; then echo "$SCHEDHOT_DEBIAN_MIRROR"; return; fi
    local m
    m=$( { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{for(i=2;i<=NF;i++)print $i}';
           grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
             sed 's/\[[^]]*\]//' | awk '{print $2}'; } |
         grep -E '^https?://[^ ]+/debian/?$' | head -n1 || true)
    echo "${m:-http://deb.debian.org/debian}" | sed 's:/*$::'
}

# ---------------------------------------------------------------- system apt
SYS_UPDATED=0
sys_apt_cache() { apt-cache "$@" 2>/dev/null; }
ensure_sys_lists() {   # run apt-get update once if a lookup found nothing
    if [ "$SYS_UPDATED" = 0 ] && [ "$(id -u)" = 0 ]; then
        log "apt lists look stale; running apt-get update"
        apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
        SYS_UPDATED=1; return 0
    fi
    return 1
}

resolve_61() {
    local p
    p=$(sys_apt_cache pkgnames linux-image-6.1.0- | grep -E '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' | sort -V | tail -n1 || true)
    if [ -z "$p" ] && ensure_sys_lists; then resolve_61; return; fi
    [ -n "$p" ] || die "no linux-image-6.1.0-*-cloud-amd64 known to apt (apt-get update?)"
    echo "$p"
}

resolve_612() {
    local p
    p=$(sys_apt_cache depends linux-image-6.12-cloud-amd64 |
        sed -n 's/^ *|\?Depends: *\(linux-image-6\.12\.[^ ]*-cloud-amd64\(-unsigned\)\?\)$/\1/p' | head -n1 || true)
    if [ -z "$p" ] && ensure_sys_lists; then resolve_612; return; fi
    [ -n "$p" ] || die "cannot resolve the dependency of linux-image-6.12-cloud-amd64 (apt-get update?)"
    echo "$p"
}

# ---------------------------------------------------------------- private apt (trixie-backports)
TB="$CACHE/apt-trixie-backports"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
tb_opts() {
    printf '%s\n' -o "Dir::Etc::SourceList=$TB/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o "Dir::State::Lists=$TB/lists" -o "Dir::Cache=$TB/cache" -o Dir::State::status=/dev/null \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
}
# private_update DIR NAME APT-OPTIONS...: apt-get update of a private configuration in DIR
# when --refresh is given or its lists are older than a day (or missing); a failed update
# or an index whose signature cannot be verified with $KEYRING stops the script.
private_update() {
    local dir=$1 name=$2; shift 2
    if [ "$REFRESH" = 1 ] || [ -z "$(find "$dir/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n1)" ]; then
        log "apt-get update (private $name config in $dir)"
        if ! apt-get "$@" --error-on=any update >"$dir/update.log" 2>&1; then
            cat "$dir/update.log" >&2; die "private apt-get update for $name failed"
        fi
        if grep -qE 'NO_PUBKEY|not signed|EXPKEYSIG' "$dir/update.log"; then
            cat "$dir/update.log" >&2; die "$name signature not verifiable with $KEYRING"
        fi
    fi
}

TB_READY=0
tb_setup() {
    [ "$TB_READY" = 1 ] && return 0
    mkdir -p "$TB/lists/partial" "$TB/cache/archives/partial"
    [ -r "$KEYRING" ] || die "$KEYRING missing (apt-get install debian-archive-keyring)"
    echo "deb [signed-by=$KEYRING] $(debian_mirror) trixie-backports main" > "$TB/sources.list"
    local -a o; mapfile -t o < <(tb_opts)
    private_update "$TB" trixie-backports "${o[@]}"
    TB_READY=1
}

resolve_73() {
    tb_setup
    local -a o; mapfile -t o < <(tb_opts)
    local p
    p=$(apt-cache "${o[@]}" search --names-only '^linux-binary-7\.3\..*-cloud-amd64$' 2>/dev/null |
        awk '{print $1}' | grep -E '^linux-binary-7\.3\.[0-9]+\+deb[0-9]+-cloud-amd64$' | sort -V | tail -n1 || true)
    [ -n "$p" ] || die "no linux-binary-7.3.*-cloud-amd64 in trixie-backports"
    echo "$p"
}

# ---------------------------------------------------------------- private apt (bookworm, arm64, ppc64el)
# The private configuration of a foreign architecture (arm64, ppc64el): bookworm, -updates and
# -security, its own lists and cache under $CACHE/apt-ARCH.
foreign_opts() {   # foreign_opts ARCH
    local d="$CACHE/apt-$1"
    printf '%s\n' -o "APT::Architecture=$1" -o "APT::Architectures=$1" \
        -o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o Dir::State::status=/dev/null \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
}
FOREIGN_READY=""
foreign_setup() {   # foreign_setup ARCH
    case " $FOREIGN_READY " in *" $1 "*) return 0 ;; esac
    local d="$CACHE/apt-$1"
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    [ -r "$KEYRING" ] || die "$KEYRING missing (apt-get install debian-archive-keyring)"
    local m; m=$(debian_mirror)
    { echo "deb [signed-by=$KEYRING] $m bookworm main"
      echo "deb [signed-by=$KEYRING] $m bookworm-updates main"
      echo "deb [signed-by=$KEYRING] ${m%/debian}/debian-security bookworm-security main"; } > "$d/sources.list"
    local -a o; mapfile -t o < <(foreign_opts "$1")
    private_update "$d" "$1" "${o[@]}"
    FOREIGN_READY="$FOREIGN_READY $1"
}

resolve_61_foreign() {   # resolve_61_foreign ARCH FLAVOUR: newest linux-image-6.1.0-N-FLAVOUR
    foreign_setup "$1"
    local -a o; mapfile -t o < <(foreign_opts "$1")
    local p
    p=$(apt-cache "${o[@]}" pkgnames linux-image-6.1.0- 2>/dev/null |
        grep -E "^linux-image-6\.1\.0-[0-9]+-$2\$" | sort -V | tail -n1 || true)
    [ -n "$p" ] || die "no linux-image-6.1.0-*-$2 in the private $1 lists ($CACHE/apt-$1)"
    echo "$p"
}

resolve_612_foreign() {   # resolve_612_foreign ARCH FLAVOUR: what linux-image-6.12-FLAVOUR depends on
    foreign_setup "$1"
    local -a o; mapfile -t o < <(foreign_opts "$1")
    local p
    p=$(apt-cache "${o[@]}" depends "linux-image-6.12-$2" 2>/dev/null |
        sed -n "s/^ *|\?Depends: *\(linux-image-6\.12\.[^ ]*-$2\)\$/\1/p" | head -n1 || true)
    [ -n "$p" ] || die "cannot resolve the dependency of linux-image-6.12-$2 in the private $1 lists ($CACHE/apt-$1)"
    echo "$p"
}

# ---------------------------------------------------------------- download + unpack
download() {   # download DIR [apt options...] -- PKG...
    local dir=$1; shift
    local -a o=()
    while [ "$1" != -- ]; do o+=("$1"); shift; done; shift
    mkdir -p "$dir"
    # apt's _apt sandbox user cannot write root-owned dirs; it falls back with a warning
    if ! (cd "$dir" && apt-get "${o[@]}" download "$@") >"$dir/download.log" 2>&1; then
        cat "$dir/download.log" >&2; die "apt-get download $* failed"
    fi
}

install_version() {
    local ver=$1 dst="$CACHE/kernels/$1"
    if [ "$REFRESH" = 0 ] && [ -s "$dst/version" ] && [ -s "$dst/vmlinuz" ] && ls "$dst"/config-* >/dev/null 2>&1; then
        log "$ver: cached ($(cat "$dst/version")) in $dst"
        return 0
    fi
    local pkgs=() aptopt=() main
    case "$ver" in
        6.1)  main=$(resolve_61);  pkgs=("$main") ;;
        6.12) main=$(resolve_612); pkgs=("$main") ;;
        7.3)  main=$(resolve_73)
              local -a o; mapfile -t o < <(tb_opts); aptopt=("${o[@]}")
              pkgs=("$main" "${main/linux-binary-/linux-base-}") ;;
        6.1-arm64|6.12-arm64|6.1-ppc64le|6.12-ppc64le)
              local fa=arm64 fl=cloud-arm64
              case "$ver" in *-ppc64le) fa=ppc64el fl=powerpc64le ;; esac
              if [ "${ver%%-*}" = 6.1 ]; then main=$(resolve_61_foreign $fa $fl); else main=$(resolve_612_foreign $fa $fl); fi
              local -a o; mapfile -t o < <(foreign_opts $fa); aptopt=("${o[@]}")
              pkgs=("$main") ;;
    esac
    log "$ver: downloading ${pkgs[*]}"
    local dl="$CACHE/debs/$ver"
    rm -rf "$dl"; download "$dl" "${aptopt[@]}" -- "${pkgs[@]}"
    local tmp="$CACHE/tmp-unpack-$ver"
    rm -rf "$tmp"; mkdir -p "$tmp"
    local d
    for d in "$dl"/*.deb; do dpkg-deb -x "$d" "$tmp" || die "dpkg-deb -x $d failed"; done

    # find vmlinuz: /boot/vmlinuz-REL (6.1, 6.12) or usr/lib/modules/REL/vmlinuz (7.x)
    local vmlinuz rel
    vmlinuz=$(find "$tmp/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -n1 || true)
    # ppc64el ships the ELF vmlinux (boot/vmlinux-REL)
    [ -n "$vmlinuz" ] || vmlinuz=$(find "$tmp/boot" -maxdepth 1 -name 'vmlinux-*' 2>/dev/null | head -n1 || true)
    if [ -n "$vmlinuz" ]; then
        rel=${vmlinuz##*/vmlinu[xz]-}
    else
        vmlinuz=$(find "$tmp/usr/lib/modules" "$tmp/lib/modules" -mindepth 2 -maxdepth 2 -name vmlinuz 2>/dev/null | head -n1 || true)
        [ -n "$vmlinuz" ] || die "$ver: no vmlinuz in ${pkgs[*]}"
        rel=$(basename "$(dirname "$vmlinuz")")
    fi
    local new="$dst.new"
    rm -rf "$new"; mkdir -p "$new"
    cp "$vmlinuz" "$new/vmlinuz"
    local f
    for f in "$tmp/boot/config-$rel" "$tmp/usr/lib/modules/$rel/config" "$tmp/lib/modules/$rel/config"; do
        [ -f "$f" ] && { cp "$f" "$new/config-$rel"; break; }
    done
    [ -f "$new/config-$rel" ] || die "$ver: no kernel config in ${pkgs[*]}"
    for f in "$tmp/boot/System.map-$rel" "$tmp/usr/lib/modules/$rel/System.map" "$tmp/lib/modules/$rel/System.map"; do
        [ -f "$f" ] && { cp "$f" "$new/System.map-$rel"; break; }
    done
    for f in "$tmp/lib/modules/$rel/modules.builtin" "$tmp/usr/lib/modules/$rel/modules.builtin"; do
        [ -f "$f" ] && { cp "$f" "$new/modules.builtin"; break; }
    done
    echo "$rel" > "$new/version"
    for d in "$dl"/*.deb; do dpkg-deb -W --showformat='${Package}=${Version}\n' "$d"; done > "$new/package"
    rm -rf "$dst" "$tmp"; mv "$new" "$dst"
    log "$ver: $rel -> $dst"
}

for v in "${VERS[@]}"; do install_version "$v"; done
for v in "${VERS[@]}"; do printf '%s\t%s\t%s\n' "$v" "$(cat "$CACHE/kernels/$v/version")" "$CACHE/kernels/$v"; done
