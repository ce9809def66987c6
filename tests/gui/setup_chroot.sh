#!/usr/bin/env bash
# Build (once) and mount a Debian sid chroot holding Debian's Blender with its GUI, Xvfb, Mesa
# software GL, xdotool, ImageMagick and tesseract: the real Blender window `make test-gui` drives.
#   usage: tests/gui/setup_chroot.sh ROOT
# Cached: a chroot whose stamp lists the same packages is reused (about 2.4 GB, 5-10 min to build).
# Exit 0: ready (mounted). Exit 3: cannot be built here (not root, no debootstrap or Debian
# mirror reachable); the caller prints "GUI TEST NOT RUN:" with the reason printed here.
set -u
R=${1:?usage: setup_chroot.sh ROOT}
SUITE=${DRLA_GUI_SUITE:-sid}
PACKAGES="blender xvfb xauth x11-apps imagemagick xdotool libgl1-mesa-dri mesa-utils procps \
python3-numpy python3-pytest python3-cattr python3-requests tesseract-ocr"
STAMP="$R/.drla-gui-ready"
want="$SUITE $PACKAGES"

not_possible() { echo "$*" >&2; exit 3; }

[ "$(id -u)" = 0 ] || not_possible "building the chroot needs root (debootstrap, chroot, mounts)"

mount_all() {
    mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
    mountpoint -q "$R/dev" || { mount --bind /dev "$R/dev"; mount --bind /dev/pts "$R/dev/pts"; \
                                mount --bind /dev/shm "$R/dev/shm"; }
    mountpoint -q "$R/sys" || { mount --rbind /sys "$R/sys"; mount --make-rslave "$R/sys"; }
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$R/usr/bin/blender" ]; then
    mount_all
    exit 0
fi

mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || not_possible "no Debian mirror configured in /etc/apt (sources.list[.d])"
if ! command -v debootstrap >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap; } >/dev/null 2>&1 \
        || not_possible "debootstrap is not installed and apt-get could not install it"
fi
mkdir -p "$R"
if [ ! -x "$R/usr/bin/apt-get" ]; then
    echo "building the $SUITE chroot in $R (debootstrap from $mirror; 5-10 minutes, once)"
    debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$R" "$mirror" > "$R.debootstrap.log" 2>&1 \
        || not_possible "debootstrap $SUITE from $mirror failed (see $R.debootstrap.log)"
fi
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
echo 'Acquire::Check-Valid-Until "false";' > "$R/etc/apt/apt.conf.d/99novalid"  # sid's Release may read "expired"
mount_all
# shellcheck disable=SC2086
chroot "$R" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $PACKAGES" \
    > "$R.apt.log" 2>&1 || not_possible "installing Debian's blender and tools into the chroot failed (see $R.apt.log)"
echo "$want" > "$STAMP"
chroot "$R" blender --version 2>/dev/null | head -n1
