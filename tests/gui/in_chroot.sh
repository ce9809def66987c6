#!/usr/bin/env bash
# Runs INSIDE the GUI chroot (tests/gui/run.sh calls it): a fresh Blender user (config, scripts,
# extensions), the zip installed with Blender's own command line as a user would, a virtual screen,
# then Blender's window on the scenario's scene driven by drive.py.
set -u
S=${DRLA_SCENARIO:?}; W=/drla-test; OUT="$W/out/$S"
mkdir -p "$OUT"
export HOME="$W/home-$S" LIBGL_ALWAYS_SOFTWARE=1 GALLIUM_DRIVER=llvmpipe
export BLENDER_USER_CONFIG="$HOME/config" BLENDER_USER_SCRIPTS="$HOME/scripts" \
       BLENDER_USER_EXTENSIONS="$HOME/extensions" BLENDER_USER_DATAFILES="$HOME/datafiles"
mkdir -p "$HOME"
blender --command extension install-file -r user_default -e "$W/drla.zip" > "$OUT/install.log" 2>&1
echo "install rc=$?" >> "$OUT/install.log"
DISPLAY_NUM=${DRLA_GUI_DISPLAY:-:91}
Xvfb "$DISPLAY_NUM" -screen 0 1920x1200x24 -nolisten tcp > "$OUT/xvfb.log" 2>&1 &
XPID=$!
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${DISPLAY_NUM#:}" ] && break; sleep 0.1; done
export DISPLAY=$DISPLAY_NUM
blend="$W/scenes/$S.blend"; [ -f "$blend" ] || blend="$W/scenes/${S%%_*}.blend"  # tank_bake_undo: tank.blend
[ -f "$blend" ] || blend=""  # examples: Blender's default file, the Cube at the origin
DRLA_GUI_OUT="$OUT" timeout "${DRLA_GUI_TIMEOUT:-600}" blender --window-geometry 0 0 1920 1200 ${blend:+"$blend"} \
    --python "$W/drive.py" > "$OUT/blender.log" 2>&1
echo "blender rc=$?" >> "$OUT/blender.log"
kill "$XPID" 2>/dev/null; wait "$XPID" 2>/dev/null
exit 0
