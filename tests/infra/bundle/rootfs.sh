# shellcheck shell=bash
# The minimal Debian root the bundle tests run the bundle in (bundle_bare_root, bundle_stub_driver):
# debootstrap --variant=minbase of the host's own suite, made once and kept in FOB_BUNDLE_ROOTFS
# (the build tree) until its marker is missing. Sourced after common.sh; expects ROOTFS and a
# scratch directory ($scratch) for logs. Making it needs root, debootstrap (installed with
# apt-get when missing) and the distribution's mirror; without them the test is skipped (exit
# 77), except under CI=true. The tests that use it hold the CTest resource lock bundle_rootfs:
# one mounts into the root while the other would read it.
MARKER="$ROOTFS/.fob-rootfs-complete"
MOUNTS=()  # what mount_in mounted, for unmount_all

# mount_in TARGET MOUNT-ARGS...: mounts, and remembers it for unmount_all.
mount_in() {
  local target=$1
  shift
  mount "$@" "$target"
  MOUNTS+=("$target")
}

# unmount_all: what mount_in mounted, in reverse order, whatever state it is in.
unmount_all() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
  done
  MOUNTS=()
}

# unmount_stale: mounts a killed earlier run left in the root, deepest first.
unmount_stale() {
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done < <(awk -v r="$ROOTFS" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts |
    sort -r)
}

# mirror_for SUITE: the archive apt already uses for SUITE (deb822 .sources or one-line lists).
mirror_for() {
  local suite=$1 f uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    # Stanzas are separated by blank lines; take the URIs of one whose Suites has SUITE.
    uri=$(awk -v suite="$suite" '
      BEGIN { RS = ""; FS = "\n" }
      {
        u = ""; s = 0; deb = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { split($i, a, /[ \t]+/); u = a[2] }
          if ($i ~ /^Types:/ && $i ~ /(^|[ \t])deb([ \t]|$)/) deb = 1
          if ($i ~ /^Suites:/) { n = split($i, b, /[ \t]+/); for (j = 2; j <= n; j++) if (b[j] == suite) s = 1 }
        }
        if (u != "" && s && deb) { print u; exit }
      }' "$f")
    [[ -n "$uri" ]] && break
  done
  if [[ -z "$uri" ]]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f "$f" ]] || continue
      # deb [options] URI SUITE COMPONENTS...
      uri=$(sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
        awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }')
      [[ -n "$uri" ]] && break
    done
  fi
  printf '%s\n' "$uri"
}

make_root() {
  local suite mirror
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ -n "$suite" ]] || skip "no VERSION_CODENAME in /etc/os-release: not Debian or Ubuntu"
  if ! command -v debootstrap >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || skip "no debootstrap and no apt-get to install it"
    echo "installing debootstrap" >&2
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
      --no-install-recommends debootstrap; } >"${scratch:?}/apt.log" 2>&1 ||
      skip "no debootstrap, and apt-get could not install it (no network?): $(tail -n1 "${scratch:?}/apt.log")"
  fi
  mirror=$(mirror_for "$suite")
  [[ -n "$mirror" ]] || skip "no apt source for suite $suite in /etc/apt/sources.list{,.d}"
  echo "debootstrap --variant=minbase $suite $ROOTFS $mirror (cached for later runs)" >&2
  if [[ -e "$ROOTFS" ]]; then
    chmod -R u+w "$ROOTFS" 2>/dev/null || true
    rm -rf --one-file-system "$ROOTFS"
  fi
  if ! debootstrap --variant=minbase "$suite" "$ROOTFS" "$mirror" >"${scratch:?}/debootstrap.log" 2>&1; then
    tail -n 5 "${scratch:?}/debootstrap.log" >&2
    rm -rf --one-file-system "$ROOTFS"
    skip "debootstrap $suite from $mirror failed (no network?)"
  fi
  touch "$MARKER"
}

# ensure_rootfs: the cached root, made when missing, without mounts a killed run left in it.
ensure_rootfs() {
  [[ $(id -u) == 0 ]] || skip "not root: making a root file system, chroot and mount need root"
  unmount_stale
  if [[ ! -f "$MARKER" ]]; then make_root; fi
}
