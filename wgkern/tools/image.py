"""Taichi's ti.tools image helpers: imwrite, imread, imresize, imshow. Images are img[x, y] (x to the right, y
upwards), as fields and GUI.set_image hold them. PNG files are read and written by wgkern.png; other formats
(.bmp, .jpg, ...) go through Pillow when it is installed. imshow draws into an off-screen wk.GUI (gui.py)."""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from wgkern.png import SIGNATURE, read_png, write_png

# stb_image's grey from RGB (Taichi reads images with it): (77 r + 150 g + 29 b) >> 8
GREY_WEIGHTS = np.array([77, 150, 29], np.uint32)
# Pillow's mode for 1-4 channels of 8 bits
PILLOW_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def image_to_bytes(img: Any, caller: str = "imwrite") -> np.ndarray:
    """A field, ndarray or array img[x, y] as uint8 of shape (width, height, channels), channels 1-4 (grey, grey
    + alpha, RGB, RGBA). Floats are clipped to [0, 1] and scaled by 255 (truncating, as Taichi); unsigned
    integers are scaled from their type's range to 0..255."""
    array = np.asarray(img.to_numpy() if hasattr(img, "to_numpy") else img)
    if array.dtype == np.uint8:
        pass
    elif array.dtype in (np.uint16, np.uint32, np.uint64):
        array = (array // (np.iinfo(array.dtype).max // 255)).astype(np.uint8)
    elif np.issubdtype(array.dtype, np.floating):
        array = (np.nan_to_num(np.clip(array.astype(np.float64), 0.0, 1.0)) * 255.0).astype(np.uint8)
    else:
        raise ValueError(f"{caller}: img has dtype {array.dtype}; images are unsigned integers (uint8, ...) or "
                         "floats in [0, 1]")
    if array.ndim == 2:
        array = array[..., None]
    if array.ndim != 3 or not 1 <= array.shape[2] <= 4:
        raise ValueError(f"{caller}: img of shape {array.shape}; an image is img[x, y] of shape (width, height) "
                         "for grey or (width, height, c) with c = 1 (grey), 2 (grey + alpha), 3 (RGB) or 4 (RGBA)")
    return array


def imwrite(img: Any, filename: str) -> None:
    """Saves img[x, y] (a field or array, see image_to_bytes) to `filename`; its extension picks the format."""
    filename = os.fspath(filename)
    rows = np.ascontiguousarray(image_to_bytes(img).swapaxes(0, 1)[::-1])      # rows from the top
    extension = os.path.splitext(filename)[1].lower()
    if extension == ".png":
        write_png(filename, rows)
        return
    pillow = _pillow(extension, "writing")
    if extension in (".jpg", ".jpeg") and rows.shape[2] in (2, 4):
        rows = rows[..., :-1]                          # JPEG has no alpha; stb's writer drops it too
    elif rows.shape[2] == 2:
        rows = _convert_channels(rows, 4)              # few formats besides PNG hold grey + alpha
    picture = pillow.Image.fromarray(rows[..., 0] if rows.shape[2] == 1 else rows, PILLOW_MODES[rows.shape[2]])
    try:
        picture.save(filename, quality=95)
    except (KeyError, ValueError, OSError) as exc:
        raise ValueError(f"imwrite: cannot write a {extension or 'file without extension'} image "
                         f"({filename}): {exc}") from None


def imread(filename: str, channels: int = 0) -> np.ndarray:
    """Loads an image as uint8 img[x, y, c], shape (width, height, c): c is the file's channel count for
    channels=0, else `channels` (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA; converted as stb_image does)."""
    if channels not in (0, 1, 2, 3, 4):
        raise ValueError(f"imread: channels must be 0 (as in the file), 1, 2, 3 or 4, not {channels!r}")
    filename = os.fspath(filename)
    with open(filename, "rb") as f:
        is_png = f.read(8) == SIGNATURE
    rows = read_png(filename) if is_png else _pillow_read(filename)
    if channels:
        rows = _convert_channels(rows, channels)
    return np.ascontiguousarray(rows.swapaxes(0, 1)[:, ::-1])


def imresize(img: Any, w: int, h: int | None = None) -> np.ndarray:
    """img[x, y, ...] resized to (w, h) (h defaults to w) by picking the nearest lower pixel, as Taichi does;
    returns img itself when it already has that size."""
    array = np.asarray(img.to_numpy() if hasattr(img, "to_numpy") else img)
    if h is None:
        h = w
    if (w, h) == array.shape[:2]:
        return array
    for name, value in (("w", w), ("h", h)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 2:
            raise ValueError(f"imresize: {name} must be an int of at least 2, not {value!r}")
    if array.ndim < 2:
        raise ValueError(f"imresize: img of shape {array.shape}; an image is img[x, y, ...]")
    x = np.clip(np.arange(w) * (array.shape[0] / w), 0, array.shape[0] - 1).astype(np.int32)
    y = np.clip(np.arange(h) * (array.shape[1] / h), 0, array.shape[1] - 1).astype(np.int32)
    return array[x[:, None], y[None, :]]


def imshow(img: Any, title: str = "imshow") -> None:
    """Taichi opens a window until Escape; here the image is drawn into an off-screen wk.GUI and shown once, so
    WK_GUI_SAVE=file.png saves it and WK_GUI_MAX_FRAMES counts it as the GUI's frames."""
    from wgkern.gui import GUI                         # the GUI (and raster.py) only load when something is shown
    pixels = image_to_bytes(img, "imshow")
    if pixels.shape[2] == 2:
        pixels = pixels[..., :1]                       # grey + alpha: the GUI shows the grey
    gui = GUI(title, res=pixels.shape[:2], show_gui=False)
    gui.set_image(pixels)
    print(f"wk.tools.imshow '{title}': {pixels.shape[0]}x{pixels.shape[1]} image drawn off-screen (no window); "
          "WK_GUI_SAVE=file.png saves it", file=sys.stderr)
    gui.show()


def _convert_channels(rows: np.ndarray, channels: int) -> np.ndarray:
    """uint8 (..., c) to (..., channels) as stb_image converts: grey from RGB by GREY_WEIGHTS, alpha 255 when
    added, dropped when not asked for."""
    have = rows.shape[-1]
    if have == channels:
        return rows
    has_alpha = have in (2, 4)
    if have <= 2:
        colour = np.repeat(rows[..., :1], 3, axis=-1)
    else:
        colour = rows[..., :3]
    if channels <= 2:
        colour = rows[..., :1] if have <= 2 else \
            ((colour.astype(np.uint32) @ GREY_WEIGHTS) >> 8).astype(np.uint8)[..., None]
    if channels in (2, 4):
        alpha = rows[..., -1:] if has_alpha else np.full(rows.shape[:-1] + (1,), 255, np.uint8)
        return np.concatenate([colour, alpha], axis=-1)
    return np.ascontiguousarray(colour)


def _pillow(extension: str, doing: str) -> Any:
    try:
        import PIL.Image
    except ImportError:
        raise RuntimeError(f"{doing} {extension or 'extension-less'} images needs Pillow (pip install pillow); "
                           "PNG files need nothing") from None
    return PIL


def _pillow_read(filename: str) -> np.ndarray:
    """A non-PNG image through Pillow, as uint8 (H, W, c) rows from the top."""
    pillow = _pillow(os.path.splitext(filename)[1].lower(), "reading")
    try:
        picture = pillow.Image.open(filename)
    except pillow.UnidentifiedImageError:
        raise ValueError(f"imread: {filename} is not an image format Pillow can read") from None
    with picture:
        mode = picture.mode
        if mode not in PILLOW_MODES.values():
            has_alpha = mode in ("PA", "RGBa", "La") or "transparency" in picture.info
            grey = mode in ("1", "I", "I;16", "F")
            mode = ("LA" if has_alpha else "L") if grey else ("RGBA" if has_alpha else "RGB")
            picture = picture.convert(mode)
        rows = np.asarray(picture, np.uint8)
    return rows[..., None] if rows.ndim == 2 else rows
