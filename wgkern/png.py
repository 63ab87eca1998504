"""PNG files with the standard library only (zlib + struct): the demos' frames, `wk.GUI.show(file)` and
wk.tools' imwrite / imread. Writes 8-bit grey, grey+alpha, RGB or RGBA; reads every PNG of the specification
(bit depths 1-16, palettes, transparency chunks, Adam7 interlacing) into 8-bit samples as stb_image (Taichi's
reader) does."""
from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Channels -> PNG colour type: grey, grey + alpha, RGB, RGBA (palette images are only read)
COLOUR_TYPE_OF_CHANNELS = {1: 0, 2: 4, 3: 2, 4: 6}
CHANNELS_OF_COLOUR_TYPE = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
# Adam7 passes: (first column, first row, column step, row step)
ADAM7_PASSES = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


class PNGError(ValueError):
    """A file that is not a PNG, or a damaged one."""


def write_png(path: str, pixels: np.ndarray) -> None:
    """Write an 8-bit image, rows from the top: (H, W) grey or (H, W, C) with C = 1 (grey), 2 (grey + alpha),
    3 (RGB) or 4 (RGBA)."""
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    height, width, channels = pixels.shape
    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(height))   # filter 0 (None) on every row
    header = struct.pack(">IIBBBBB", width, height, 8, COLOUR_TYPE_OF_CHANNELS[channels], 0, 0, 0)
    with open(path, "wb") as f:
        f.write(SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b""))


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def to_rgba(rgb: np.ndarray) -> np.ndarray:
    """Float RGB in [0, 1] of shape (H, W, 3) -> uint8 RGBA."""
    out = np.empty(rgb.shape[:2] + (4,), np.uint8)
    out[..., :3] = np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)
    out[..., 3] = 255
    return out


# ---- reading ---------------------------------------------------------------------------------------------------
def read_png(path: str) -> np.ndarray:
    """A PNG file as uint8 (H, W, C), rows from the top. C is the file's: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA;
    a palette becomes RGB (RGBA with a tRNS chunk), a tRNS colour key adds alpha, 16-bit samples keep their high
    byte and 1/2/4-bit grey is scaled to 0..255, as stb_image returns them."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != SIGNATURE:
        raise PNGError(f"{path}: not a PNG file")
    chunks = _read_chunks(path, data)
    if not chunks or chunks[0][0] != b"IHDR":
        raise PNGError(f"{path}: the PNG has no IHDR chunk first")
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if colour_type not in CHANNELS_OF_COLOUR_TYPE:
        raise PNGError(f"{path}: unknown PNG colour type {colour_type}")
    channels = CHANNELS_OF_COLOUR_TYPE[colour_type]
    compressed = b"".join(body for tag, body in chunks if tag == b"IDAT")
    try:
        raw = zlib.decompress(compressed)
    except zlib.error as exc:
        raise PNGError(f"{path}: damaged PNG image data ({exc})") from None
    samples = _deinterlace(raw, width, height, channels, depth) if interlace else \
        _decode_pass(raw, 0, width, height, channels, depth)[0]
    chunk_of = {tag: body for tag, body in chunks}
    if colour_type == 3:
        return _expand_palette(path, samples[..., 0], chunk_of.get(b"PLTE"), chunk_of.get(b"tRNS"))
    if depth == 16:
        transparent = _colour_key(chunk_of.get(b"tRNS"), colour_type, 1)
        pixels = (samples >> 8).astype(np.uint8)
    else:
        scale = {1: 0xFF, 2: 0x55, 4: 0x11, 8: 1}[depth]
        transparent = _colour_key(chunk_of.get(b"tRNS"), colour_type, scale)
        samples = samples * scale
        pixels = samples.astype(np.uint8)
    if transparent is not None:    # a colour key: pixels equal to it get alpha 0, all others 255
        alpha = np.where(np.all(samples == transparent, axis=-1), 0, 255).astype(np.uint8)
        pixels = np.concatenate([pixels, alpha[..., None]], axis=-1)
    return pixels


def _read_chunks(path: str, data: bytes) -> list[tuple[bytes, bytes]]:
    chunks = []
    offset = 8
    while offset + 8 <= len(data):
        length, tag = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if len(body) != length:
            raise PNGError(f"{path}: the PNG ends inside its {tag.decode('latin-1')} chunk")
        chunks.append((tag, body))
        offset += 12 + length
        if tag == b"IEND":
            break
    return chunks


def _colour_key(trns: bytes | None, colour_type: int, scale: int) -> np.ndarray | None:
    if trns is None or colour_type not in (0, 2):
        return None
    count = 1 if colour_type == 0 else 3
    return np.array(struct.unpack(f">{count}H", trns[:2 * count]), np.int64) * scale


def _expand_palette(path: str, indices: np.ndarray, palette: bytes | None, trns: bytes | None) -> np.ndarray:
    if palette is None:
        raise PNGError(f"{path}: a palette PNG without a PLTE chunk")
    colours = np.frombuffer(palette, np.uint8).reshape(-1, 3)
    if trns is not None:
        alpha = np.full(len(colours), 255, np.uint8)
        alpha[:len(trns)] = np.frombuffer(trns[:len(colours)], np.uint8)
        colours = np.concatenate([colours, alpha[:, None]], axis=1)
    if indices.size and int(indices.max()) >= len(colours):
        raise PNGError(f"{path}: a pixel names palette entry {int(indices.max())} of {len(colours)}")
    return colours[indices]


def _deinterlace(raw: bytes, width: int, height: int, channels: int, depth: int) -> np.ndarray:
    samples = np.zeros((height, width, channels), np.uint16 if depth == 16 else np.uint8)
    offset = 0
    for x0, y0, dx, dy in ADAM7_PASSES:
        pass_width = (width - x0 + dx - 1) // dx
        pass_height = (height - y0 + dy - 1) // dy
        if pass_width <= 0 or pass_height <= 0:
            continue
        part, offset = _decode_pass(raw, offset, pass_width, pass_height, channels, depth)
        samples[y0::dy, x0::dx] = part
    return samples


def _decode_pass(raw: bytes, offset: int, width: int, height: int, channels: int,
                 depth: int) -> tuple[np.ndarray, int]:
    """Unfilters one (sub-)image starting at raw[offset]; returns its samples (H, W, C) and the end offset."""
    bits_per_pixel = channels * depth
    row_bytes = (width * bits_per_pixel + 7) // 8
    stride = max(1, bits_per_pixel // 8)          # filters look back one pixel, at least one byte
    end = offset + height * (row_bytes + 1)
    if len(raw) < end:
        raise PNGError("the PNG's image data is shorter than its size says")
    rows = np.zeros((height, row_bytes), np.uint8)
    previous = np.zeros(row_bytes, np.uint8)
    for row in range(height):
        start = offset + row * (row_bytes + 1)
        filter_type = raw[start]
        line = np.frombuffer(raw, np.uint8, row_bytes, start + 1)
        rows[row] = previous = _unfilter(filter_type, line, previous, stride)
    if depth == 16:
        samples = rows.view(">u2").astype(np.uint16)
    elif depth == 8:
        samples = rows
    else:
        bits = np.unpackbits(rows, axis=1).reshape(height, -1, depth)
        samples = (bits * (1 << np.arange(depth - 1, -1, -1, dtype=np.uint8))).sum(axis=2, dtype=np.uint8)
    return samples[:, :width * channels].reshape(height, width, channels), end


def _unfilter(filter_type: int, line: np.ndarray, previous: np.ndarray, stride: int) -> np.ndarray:
    """PNG filters 0-4 (None, Sub, Up, Average, Paeth) undone on one row of bytes."""
    if filter_type == 0:
        return line.copy()
    if filter_type == 2:
        return line + previous
    if filter_type == 1 and len(line) % stride == 0:     # a running sum per byte of the pixel, modulo 256
        return np.cumsum(line.reshape(-1, stride), axis=0, dtype=np.uint8).reshape(-1)
    if filter_type not in (1, 3, 4):
        raise PNGError(f"unknown PNG filter type {filter_type}")
    out = bytearray(line.tobytes())
    up = previous.tobytes()
    for i in range(len(out)):                           # Average and Paeth depend on the byte just decoded
        left = out[i - stride] if i >= stride else 0
        if filter_type == 1:
            predicted = left
        elif filter_type == 3:
            predicted = (left + up[i]) >> 1
        else:
            upper_left = up[i - stride] if i >= stride else 0
            estimate = left + up[i] - upper_left
            distance_left, distance_up = abs(estimate - left), abs(estimate - up[i])
            distance_upper_left = abs(estimate - upper_left)
            if distance_left <= distance_up and distance_left <= distance_upper_left:
                predicted = left
            elif distance_up <= distance_upper_left:
                predicted = up[i]
            else:
                predicted = upper_left
        out[i] = (out[i] + predicted) & 0xFF
    return np.frombuffer(bytes(out), np.uint8)
