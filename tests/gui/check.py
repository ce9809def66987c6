"""Verdict of one GUI scenario: its checks, Blender's log and what the screenshots say (OCR).

    python3 tests/gui/check.py OUT/SCENARIO      (exit 1 on any failure, listing each)

Fails on: a failed or missing check, a driver that did not reach its end, any Python traceback
in Blender's output, an Add menu item labelled with a raw idname (``DRLA_CameraSensorNode``)
or an Add menu whose expected labels OCR cannot find.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RAW_IDNAME = re.compile(r"DRLA_\w*(?:Node|_MT_|_OT_)\w*|DRLA_MT\w*|\bDRLA_[A-Z][A-Za-z]+\b")
#: Words a person must be able to read in each OCR'd screenshot (tesseract is rough: a few words).
EXPECTED_WORDS = {
    "add_menu": ["Sensors", "Rewards"],
    "add_sensors": ["Camera", "Transform"],
    "add_rewards": ["Distance"],
    "add_agent": ["Agent"],
}


def verdict(folder: Path) -> list[str]:
    problems: list[str] = []
    results_path = folder / "results.json"
    if not results_path.is_file():
        return [f"{results_path} missing: the driver never ran (see {folder / 'blender.log'})"]
    results = json.loads(results_path.read_text())
    for c in results["checks"]:
        if not c["ok"]:
            problems.append(f"FAILED: {c['name']}: {c['detail']}")
    if not results["checks"]:
        problems.append("no checks were recorded")
    if not results.get("finished"):
        problems.append("the driver did not reach its end (Blender crashed, hung or was killed)")
    log = (folder / "blender.log").read_text(errors="replace") if (folder / "blender.log").is_file() else ""
    for m in re.finditer(r"Traceback \(most recent call last\):", log):
        problems.append("Python traceback in Blender's output:\n" + log[m.start():m.start() + 1500])
    install = (folder / "install.log").read_text(errors="replace") if (folder / "install.log").is_file() else ""
    if "install rc=0" not in install:
        problems.append("installing the zip with `blender --command extension install-file` failed:\n" + install)
    for key, text in results.get("ocr", {}).items():
        if key.startswith("add_"):
            raw = sorted(set(RAW_IDNAME.findall(text)))
            if raw:
                problems.append(f"{key}: menu items labelled with raw idnames: {raw}")
            missing = [w for w in EXPECTED_WORDS.get(key, []) if w.lower() not in text.lower()]
            if missing:
                problems.append(f"{key}: OCR does not find {missing} in the menu; it read: {text[:400]!r}")
    return problems


def main() -> int:
    folder = Path(sys.argv[1])
    problems = verdict(folder)
    results = json.loads((folder / "results.json").read_text()) if (folder / "results.json").is_file() else {}
    checks = results.get("checks", [])
    passed = sum(c["ok"] for c in checks)
    print(f"test-gui {folder.name}: Blender {results.get('blender', '?')}: "
          f"{passed} of {len(checks)} checks passed, {len(results.get('screenshots', []))} screenshots")
    for p in problems:
        print("  " + p.replace("\n", "\n    "))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
