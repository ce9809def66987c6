#!/usr/bin/env bash
# make test-gui: install the built extension zip into Debian's real Blender (a chroot, its own
# window on Xvfb with Mesa software GL) the way a user does, open the example scenes, drive the UI
# (tests/gui/drive.py) and check what happened (tests/gui/check.py). Screenshots and logs: OUT.
#   usage: tests/gui/run.sh ZIP OUT
# Where Debian's packages cannot be reached it prints "GUI TEST NOT RUN:" and why, and exits 0;
# everything that fails inside the GUI test fails the target.
set -u
ZIP=${1:?zip}; OUT=${2:?out dir}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../.." && pwd)
ROOT=${DRLA_GUI_ROOT:-/var/cache/drla-gui/sid}
banner() { printf '\n********************************************************************\n%s\n' "$*"
           printf '********************************************************************\n\n'; }

mounted_before=no; mountpoint -q "$ROOT/proc" 2>/dev/null && mounted_before=yes
if ! why=$("$HERE/setup_chroot.sh" "$ROOT" 2>&1 >/dev/null); then
    banner "GUI TEST NOT RUN: $why"
    exit 0
fi
cleanup() { umount "$ROOT/dev/shm" "$ROOT/dev/pts" "$ROOT/dev" 2>/dev/null; umount -R "$ROOT/sys" 2>/dev/null
            umount "$ROOT/proc" 2>/dev/null; }
[ $mounted_before = no ] && trap cleanup EXIT   # leave mounts someone else made (a parallel run) alone

W="$ROOT/drla-test"                       # everything of one run, fresh each time
rm -rf "$W"; mkdir -p "$W/scenes" "$W/out"
cp "$ZIP" "$W/drla.zip"
cp "$REPO"/scenes/*/*.blend "$W/scenes/"
cp "$HERE/drive.py" "$HERE/in_chroot.sh" "$W/"
VERSION=$(chroot "$ROOT" blender --version 2>/dev/null | head -n1)
echo "test-gui: $VERSION (Debian, chroot $ROOT), extension $(basename "$ZIP")"
mkdir -p "$OUT"
status=0
for scenario in ${DRLA_GUI_SCENARIOS:-tank robot_arm tank_duel tank_copies tank_nets pacman walker_copies examples tank_demo cartpole_rb_ppo cartpole_rb_sac cartpole_rb}; do
    echo "test-gui: scenario $scenario ..."
    start=$(date +%s)
    chroot "$ROOT" env -i PATH=/usr/bin:/bin DRLA_SCENARIO="$scenario" bash /drla-test/in_chroot.sh
    rm -rf "${OUT:?}/$scenario"; mkdir -p "$OUT/$scenario"; cp -r "$W/out/$scenario/." "$OUT/$scenario/"
    echo "test-gui: scenario $scenario ran $(( $(date +%s) - start )) s"
    python3 "$HERE/check.py" "$OUT/$scenario" || status=1
done
echo "test-gui: screenshots and logs in $OUT"
[ $status = 0 ] && echo "test-gui: all scenarios passed ($VERSION)" || echo "test-gui: FAILED"
exit $status
