# Sourced by packaging/build-deb.sh and packaging/cross-deb.sh (bash): safe_dir, the check
# root makes before it writes into a directory a user named.
#
# safe_dir TOOL WHAT DIR: exits (one line on stderr, prefixed "TOOL: ") unless every
# directory from DIR up to / that exists is no symbolic link, belongs to root or to the
# caller (sudo's user, SUDO_UID), and is writable by no one else unless it is sticky (as
# /tmp: then no other user can rename what is ours in it); DIR itself writable by no one
# else at all. Exit 2 for a path that is no path ("", "-x"), 1 otherwise. Run it before
# making DIR and again after (mkdir -p accepts a directory another user made in between).
safe_dir() {
  local tool="$1" what="$2" d="$3" first=1 owner
  case "$d" in
    -*|"") echo "$tool: $what '$d': give a directory path" >&2; exit 2 ;;
  esac
  d="$(realpath -s -m -- "$d")"
  while :; do
    if [ -L "$d" ]; then
      echo "$tool: $what: $d is a symbolic link: give a path without links" >&2; exit 1
    fi
    if [ -e "$d" ]; then
      [ -d "$d" ] || { echo "$tool: $what: $d is not a directory" >&2; exit 1; }
      owner="$(stat -c %u -- "$d")"
      if [ "$owner" != 0 ] && [ "$owner" != "${SUDO_UID:-0}" ]; then
        echo "$tool: $what: $d belongs to another user (uid $owner): give a directory of root's or your own" >&2; exit 1
      fi
      if [ -n "$(find "$d" -maxdepth 0 -perm /022)" ] && { [ "$first" = 1 ] || [ -z "$(find "$d" -maxdepth 0 -perm -1000)" ]; }; then
        echo "$tool: $what: $d is writable by others: give a directory only root or you can write" >&2; exit 1
      fi
      first=0
    fi
    [ "$d" = / ] && break
    d="$(dirname -- "$d")"
  done
}
