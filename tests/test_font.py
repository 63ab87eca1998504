"""wgkern/font.py: the GUIs' bitmap font and its scaled coverage masks."""
from __future__ import annotations

import numpy as np

from wgkern import font


def test_every_printable_ascii_character_has_its_own_glyph():
    printable = [chr(code) for code in range(32, 127)]
    assert sorted(font.GLYPHS) == printable
    shapes = {font.glyph(c).shape for c in printable}
    assert shapes == {(font.GLYPH_ROWS, font.GLYPH_COLUMNS)}
    inked = [c for c in printable if c != " "]
    assert all(font.glyph(c).any() for c in inked)
    assert len({font.glyph(c).tobytes() for c in inked}) == len(inked)          # no two glyphs alike
    assert all(not font.glyph(c)[7:].any() for c in "ABCXYZabc0129")            # descenders only where due
    assert all(font.glyph(c)[7:].any() for c in "gjpqy,;")
    assert font.glyph("\u00e9") is font.MISSING_GLYPH and font.glyph("\n") is font.MISSING_GLYPH


def test_masks_scale_by_box_filtering_and_are_cached():
    one = font.text_mask("Ag", 10)
    assert one.shape == (10, 12) and set(np.unique(one)) <= {0.0, 1.0}
    assert np.array_equal(one > 0, font.text_bitmap("Ag"))
    three = font.text_mask("Ag", 30)
    assert np.array_equal(three, np.kron(one, np.ones((3, 3))))                 # integer scales stay crisp
    odd = font.text_mask("Ag", 15)
    assert odd.shape == (15, 18) and 0 < odd.max() <= 1.0
    assert np.isclose(odd.sum(), one.sum() * 1.5 ** 2, rtol=1e-5)               # ink area scales with size^2
    assert font.text_mask("Ag", 15) is odd and not odd.flags.writeable
    assert font.text_size("ab\n\tc", 20) == font.text_mask("ab\n\tc", 20).shape[::-1] == (60, 40)
