"""The bitmap font of the off-screen GUIs: glyphs for printable ASCII drawn for wgkern on a 5 x 9 grid, and text
rasterised from them into coverage masks at any pixel size.

Owns the glyph data, the text layout (fixed advance, lines split at newlines) and the scaling (exact box
filtering, so a size that is a multiple of EM_ROWS stays crisp and others are antialiased). Blending masks into an
image lives in raster.py (`draw_text`); where text goes in each GUI lives in gui.py and ui/imgui.py."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

GLYPH_COLUMNS = 5       # ink columns of a glyph; one more column of space separates neighbours
GLYPH_ROWS = 9          # rows 0-6 above the baseline (capitals, digits, ascenders), rows 7-8 descenders
TOP_GAP = 1             # a row of space above the capitals
ADVANCE = GLYPH_COLUMNS + 1
EM_ROWS = TOP_GAP + GLYPH_ROWS      # font units per line: a font of size s pixels draws s / EM_ROWS px per unit
TAB_COLUMNS = 4         # a tab moves to the next multiple of this many characters

# The glyphs, in bands of up to 13 characters: each of the 9 strings is one row of every glyph in the band, glyphs
# separated by a space, '#' ink and '.' paper. Space is blank; characters with no glyph (control characters,
# anything outside ASCII) are drawn as MISSING_GLYPH, an outlined box.
FONT_SHEETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ('ABCDEFGHIJKLM', (
        ".###. ####. .###. ####. ##### ##### .###. #...# .###. ..### #...# #.... #...#",
        "#...# #...# #...# #...# #.... #.... #...# #...# ..#.. ...#. #..#. #.... ##.##",
        "#...# #...# #.... #...# #.... #.... #.... #...# ..#.. ...#. #.#.. #.... #.#.#",
        "##### ####. #.... #...# ####. ####. #.### ##### ..#.. ...#. ##... #.... #.#.#",
        "#...# #...# #.... #...# #.... #.... #...# #...# ..#.. ...#. #.#.. #.... #...#",
        "#...# #...# #...# #...# #.... #.... #...# #...# ..#.. #..#. #..#. #.... #...#",
        "#...# ####. .###. ####. ##### #.... .#### #...# .###. .##.. #...# ##### #...#",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    )),
    ('NOPQRSTUVWXYZ', (
        "#...# .###. ####. .###. ####. .#### ##### #...# #...# #...# #...# #...# #####",
        "#...# #...# #...# #...# #...# #.... ..#.. #...# #...# #...# #...# #...# ....#",
        "##..# #...# #...# #...# #...# #.... ..#.. #...# #...# #...# .#.#. .#.#. ...#.",
        "#.#.# #...# ####. #...# ####. .###. ..#.. #...# #...# #.#.# ..#.. ..#.. ..#..",
        "#..## #...# #.... #.#.# #.#.. ....# ..#.. #...# #...# #.#.# .#.#. ..#.. .#...",
        "#...# #...# #.... #..#. #..#. ....# ..#.. #...# .#.#. #.#.# #...# ..#.. #....",
        "#...# .###. #.... .##.# #...# ####. ..#.. .###. ..#.. .#.#. #...# ..#.. #####",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    )),
    ('abcdefghijklm', (
        "..... #.... ..... ....# ..... ..##. ..... #.... ..#.. ...#. #.... .##.. .....",
        "..... #.... ..... ....# ..... .#..# ..... #.... ..... ..... #.... ..#.. .....",
        ".###. ####. .###. .#### .###. .#... .#### #.##. .##.. ..##. #..#. ..#.. ##.#.",
        "....# #...# #.... #...# #...# ###.. #...# ##..# ..#.. ...#. #.#.. ..#.. #.#.#",
        ".#### #...# #.... #...# ##### .#... #...# #...# ..#.. ...#. ##... ..#.. #.#.#",
        "#...# #...# #...# #...# #.... .#... #...# #...# ..#.. ...#. #.#.. ..#.. #.#.#",
        ".#### ####. .###. .#### .###. .#... .#### #...# .###. ...#. #..#. .###. #.#.#",
        "..... ..... ..... ..... ..... ..... ....# ..... ..... #..#. ..... ..... .....",
        "..... ..... ..... ..... ..... ..... .###. ..... ..... .##.. ..... ..... .....",
    )),
    ('nopqrstuvwxyz', (
        "..... ..... ..... ..... ..... ..... .#... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... .#... ..... ..... ..... ..... ..... .....",
        "#.##. .###. ####. .#### #.##. .#### ####. #...# #...# #...# #...# #...# #####",
        "##..# #...# #...# #...# ##..# #.... .#... #...# #...# #...# .#.#. #...# ...#.",
        "#...# #...# #...# #...# #.... .###. .#... #...# #...# #.#.# ..#.. #...# ..#..",
        "#...# #...# #...# #...# #.... ....# .#..# #..## .#.#. #.#.# .#.#. #...# .#...",
        "#...# .###. ####. .#### #.... ####. ..##. .##.# ..#.. .#.#. #...# .#### #####",
        "..... ..... #.... ....# ..... ..... ..... ..... ..... ..... ..... ....# .....",
        "..... ..... #.... ....# ..... ..... ..... ..... ..... ..... ..... .###. .....",
    )),
    ('0123456789!?.', (
        ".###. ..#.. .###. ####. ...#. ##### ..##. ##### .###. .###. ..#.. .###. .....",
        "#...# .##.. #...# ....# ..##. #.... .#... ....# #...# #...# ..#.. #...# .....",
        "#..## ..#.. ....# ....# .#.#. ####. #.... ...#. #...# #...# ..#.. ....# .....",
        "#.#.# ..#.. ...#. .###. #..#. ....# ####. ..#.. .###. .#### ..#.. ...#. .....",
        "##..# ..#.. ..#.. ....# ##### ....# #...# .#... #...# ....# ..#.. ..#.. .....",
        "#...# ..#.. .#... ....# ...#. #...# #...# .#... #...# ...#. ..... ..... .##..",
        ".###. .###. ##### ####. ...#. .###. .###. .#... .###. .##.. ..#.. ..#.. .##..",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    )),
    (',:;\'"`-+*/\\=_', (
        "..... ..... ..... ..#.. .#.#. .#... ..... ..... ..... ..... ..... ..... .....",
        "..... .##.. .##.. ..#.. .#.#. ..#.. ..... ..#.. ..#.. ....# #.... ..... .....",
        "..... .##.. .##.. ..#.. .#.#. ...#. ..... ..#.. #.#.# ...#. .#... ##### .....",
        "..... ..... ..... ..... ..... ..... ##### ##### .###. ..#.. ..#.. ..... .....",
        "..... .##.. .##.. ..... ..... ..... ..... ..#.. #.#.# .#... ...#. ##### .....",
        ".##.. .##.. .##.. ..... ..... ..... ..... ..#.. ..#.. #.... ....# ..... .....",
        ".##.. ..... ..#.. ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
        "..#.. ..... .#... ..... ..... ..... ..... ..... ..... ..... ..... ..... #####",
        ".#... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    )),
    ('()[]{}<>|^~@#', (
        "...#. .#... .###. .###. ...## ##... ...#. .#... ..#.. ..#.. ..... .###. .#.#.",
        "..#.. ..#.. .#... ...#. ..#.. ..#.. ..#.. ..#.. ..#.. .#.#. ..... #...# .#.#.",
        ".#... ...#. .#... ...#. ..#.. ..#.. .#... ...#. ..#.. #...# .#... #.### #####",
        ".#... ...#. .#... ...#. .#... ...#. #.... ....# ..#.. ..... #.#.# #.#.# .#.#.",
        ".#... ...#. .#... ...#. ..#.. ..#.. .#... ...#. ..#.. ..... ...#. #.### #####",
        "..#.. ..#.. .#... ...#. ..#.. ..#.. ..#.. ..#.. ..#.. ..... ..... #.... .#.#.",
        "...#. .#... .###. .###. ...## ##... ...#. .#... ..#.. ..... ..... .###. .#.#.",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
        "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    )),
    ('$%&', (
        "..#.. ##... .##..",
        ".#### ##..# #..#.",
        "#.#.. ...#. #.#..",
        ".###. ..#.. .#...",
        "..#.# .#... #.#.#",
        "####. #..## #..#.",
        "..#.. ...## .##.#",
        "..... ..... .....",
        "..... ..... .....",
    )),

)


def _parse_sheets() -> dict[str, np.ndarray]:
    """Each character of FONT_SHEETS as a bool bitmap (GLYPH_ROWS, GLYPH_COLUMNS)."""
    glyphs = {}
    for characters, rows in FONT_SHEETS:
        for index, character in enumerate(characters):
            start = index * ADVANCE
            glyphs[character] = np.array([[cell == "#" for cell in row[start:start + GLYPH_COLUMNS]] for row in rows])
    return glyphs


def _missing_glyph() -> np.ndarray:
    """An outlined box the height of a capital, for characters the font lacks."""
    box = np.zeros((GLYPH_ROWS, GLYPH_COLUMNS), bool)
    box[0:7, 0] = box[0:7, -1] = True
    box[0, :] = box[6, :] = True
    return box


GLYPHS: dict[str, np.ndarray] = {" ": np.zeros((GLYPH_ROWS, GLYPH_COLUMNS), bool), **_parse_sheets()}
MISSING_GLYPH = _missing_glyph()


def glyph(character: str) -> np.ndarray:
    """The bitmap (GLYPH_ROWS, GLYPH_COLUMNS) drawn for `character` (MISSING_GLYPH where the font has none)."""
    return GLYPHS.get(character, MISSING_GLYPH)


def text_lines(text: str) -> list[str]:
    """The lines of `text` as drawn: split at newlines (\\r\\n and \\r too), tabs expanded to spaces."""
    return [line.expandtabs(TAB_COLUMNS) for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def text_bitmap(text: str) -> np.ndarray:
    """`text` at one pixel per font unit: bool (lines * EM_ROWS, longest line * ADVANCE), each line's top row a gap."""
    lines = text_lines(text)
    columns = max(len(line) for line in lines)
    bitmap = np.zeros((len(lines) * EM_ROWS, columns * ADVANCE), bool)
    for number, line in enumerate(lines):
        top = number * EM_ROWS + TOP_GAP
        for index, character in enumerate(line):
            left = index * ADVANCE
            bitmap[top:top + GLYPH_ROWS, left:left + GLYPH_COLUMNS] = glyph(character)
    return bitmap


def _box_weights(units: int, scale: float) -> np.ndarray:
    """(pixels, units): how much of each output pixel [i, i+1) the font unit [k * scale, (k + 1) * scale) covers."""
    pixels = max(int(np.ceil(units * scale - 1e-6)), 0)
    starts = np.arange(units) * scale
    low = np.maximum(np.arange(pixels)[:, None], starts[None, :])
    high = np.minimum(np.arange(pixels)[:, None] + 1, starts[None, :] + scale)
    return np.clip(high - low, 0.0, None)


@lru_cache(maxsize=512)
def text_mask(text: str, size: float) -> np.ndarray:
    """The coverage (rows, columns) in [0, 1] of `text` drawn `size` pixels per line (EM_ROWS font units), its top
    left corner at the mask's: each pixel holds the fraction of it the glyphs' ink covers. Cached, read-only."""
    bitmap = text_bitmap(text).astype(np.float32)
    scale = float(size) / EM_ROWS
    mask = _box_weights(bitmap.shape[0], scale).astype(np.float32) @ bitmap
    mask = mask @ _box_weights(bitmap.shape[1], scale).astype(np.float32).T
    mask = np.clip(mask, 0.0, 1.0)
    mask.setflags(write=False)
    return mask


def text_size(text: str, size: float) -> tuple[int, int]:
    """(width, height) in pixels of `text` drawn at `size` (as text_mask's shape, without building it)."""
    lines = text_lines(text)
    scale = float(size) / EM_ROWS
    width = int(np.ceil(max(len(line) for line in lines) * ADVANCE * scale - 1e-6))
    return width, int(np.ceil(len(lines) * EM_ROWS * scale - 1e-6))
