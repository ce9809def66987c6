"""Text that fits the sidebar: Blender's ``layout.label`` never wraps, it cuts a long text off with '...'.

``wrap`` cuts a text into lines no wider than a width in pixels (measured with ``blf`` in the interface
font, at the UI scale), ``label_wrapped`` draws them as labels; ``text_space`` is what a label can use
in the region being drawn (its real width). Every text the sidebar draws that can be long goes
through here.
"""

from __future__ import annotations

import bpy

#: Pixels of a sidebar's width that text labels cannot use, at UI scale 1: the category tabs, the
#: panel's margins (measured in Blender 5.2: a 292 px sidebar leaves 228 px for a plain label).
SIDEBAR_MARGIN_PX = 64
ICON_PX = 24  # an icon before the text, and its gap
BOX_PX = 8    # the inner margins of a box
FALLBACK_REGION_PX = 300  # no region (headless, scripts): a default sidebar's width


def ui_scale(context=None) -> float:
    """Blender's pixel scale (DPI and Resolution Scale together); 1.0 where it is unknown (headless)."""
    prefs = getattr(context, "preferences", None) or bpy.context.preferences
    scale = float(getattr(prefs.system, "ui_scale", 0.0) or 0.0)
    return scale if scale > 0 else 1.0


def text_space(context, *, icon: bool = False, box: bool = False) -> int:
    """Pixels a label's text can use in this sidebar (its region's real width, whatever the UI scale)."""
    region = getattr(context, "region", None)
    width = getattr(region, "width", 0) or FALLBACK_REGION_PX * ui_scale(context)
    margin = SIDEBAR_MARGIN_PX + (ICON_PX if icon else 0) + (BOX_PX if box else 0)
    return max(40, int(width - margin * ui_scale(context)))


def text_measure(context=None):
    """``f(text) -> pixels`` in Blender's interface font at the current UI scale."""
    prefs = getattr(context, "preferences", None) or bpy.context.preferences
    points = getattr(getattr(prefs.ui_styles[0], "widget", None), "points", 11.0) if len(prefs.ui_styles) else 11.0
    size = points * ui_scale(context)
    try:
        import blf

        blf.size(0, size)
        if blf.dimensions(0, "abc")[0] <= 0:
            raise RuntimeError("no font")
    except Exception:  # no font loaded: an average glyph width
        return lambda text: 0.55 * size * len(text)
    return lambda text: blf.dimensions(0, text)[0]


def wrap(text: str, width: float, measure) -> list[str]:
    """``text`` cut into lines no wider than ``width`` pixels, at spaces; a word wider than a line
    (a file path) is cut where it must. Line breaks in ``text`` are kept."""
    lines: list[str] = []
    for paragraph in str(text).splitlines() or [""]:
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}" if line else word
            if measure(candidate) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
            while measure(word) > width and len(word) > 1:
                cut = 1
                while cut < len(word) - 1 and measure(word[:cut + 1]) <= width:
                    cut += 1
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return lines


def label_wrapped(layout, context, text: str, icon: str = 'NONE', *, box: bool = False) -> None:
    """``text`` as labels, wrapped to the sidebar's width; the lines after the first are indented
    under the icon."""
    lines = wrap(text, text_space(context, icon=icon != 'NONE', box=box), text_measure(context))
    col = layout.column(align=True)
    for i, line in enumerate(lines):
        if icon == 'NONE':
            col.label(text=line)
        else:
            col.label(text=line, icon=icon if i == 0 else 'BLANK1')


#: Pixels between two labels side by side in a row (Blender's button gap, at UI scale 1)
COLUMN_GAP_PX = 8


def labels_in_columns(layout, context, cells: list[str], columns: int = 2) -> None:
    """Short figures side by side, ``columns`` to a row; a figure too wide for its column gets a row of its
    own, wrapped (``'ghost best -3.53, mean -4.1 (generation 12)'`` is never cut off)."""
    if not cells:
        return
    measure = text_measure(context)
    full = text_space(context)
    column = (full - (columns - 1) * COLUMN_GAP_PX * ui_scale(context)) / columns
    col = layout.column(align=True)
    pending: list[str] = []

    def flush() -> None:
        if pending:
            row = col.row(align=True)
            for text in pending + [""] * (columns - len(pending)):
                row.label(text=text)
            pending.clear()

    for cell in cells:
        if measure(cell) <= column:
            pending.append(cell)
            if len(pending) == columns:
                flush()
            continue
        flush()
        label_wrapped(col, context, cell)
    flush()
