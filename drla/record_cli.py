"""``drla record-keyframes``: a demonstration from a .blend's keyframed animation (the add-on's
``runs.demos_keyframes`` on the opened file). Its own module: it opens scenes (``drla.scene``), which the
demonstration flags of ``demo_flags`` (used by ``drla.scene`` itself) must not."""

from __future__ import annotations

import argparse
from typing import Any

from drla_core.io.demos import DemoFormatError

from .common import CLIError, float_range
from .scene import addon_module, compile_or_explain, open_scene


def add_record_parser(sub: Any) -> None:
    """``drla record-keyframes BLEND``."""
    p = sub.add_parser("record-keyframes", help="make a demonstration from a scene's keyframed animation",
                       description="Step a .blend's frame range as its tree's environment would, read the observations "
                                   "and rewards, and infer each step's action from what the keyframed objects did "
                                   "(the nearest action; continuous: the amounts). Prints the fraction of steps "
                                   "explained. The scene file is not changed.")
    p.add_argument("scene", help="path/to/scene.blend")
    p.add_argument("--tree", help="DRLA node tree in the .blend (default: the only one)")
    p.add_argument("--out", metavar="FILE.npz", help="the demonstration (default: <scene>_<tree>_keyframes.npz beside "
                                                     "the .blend)")
    p.add_argument("--tolerance", type=float_range(0.0, 1000.0), default=0.05, metavar="T",
                   help="a step is explained when its action's change is within T plus T times the keyframed change "
                        "(default 0.05)")
    p.set_defaults(func=cmd_record_keyframes)


def cmd_record_keyframes(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.out and not args.out.lower().endswith(".npz"):
        raise CLIError(f"--out: a demonstration is an .npz file, got {args.out}")
    _bpy, ext, tree, scene = open_scene(args.scene, args.tree)
    compile_or_explain(ext, tree, scene)
    recorder = addon_module("runs.demos_keyframes")
    try:
        path, result = recorder.record_keyframes_to_file(tree, scene, args.out, str(Path(args.scene).resolve()),
                                                         tolerance=args.tolerance)
    except (ValueError, DemoFormatError) as exc:
        raise CLIError(str(exc)) from None
    demo = result.demo
    print(f"{len(demo)} steps recorded from frames {demo.meta['frames'][0]}..{demo.meta['frames'][1]}; "
          f"{result.explained:.0%} explained by an action within the tolerance; return {demo.rewards.sum():.3g}")
    print(f"demonstration written to {path}")
    return 0
