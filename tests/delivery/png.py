"""Decode a PNG (8-bit RGB/RGBA, non-interlaced, as Chromium writes screenshots) with the stdlib + numpy."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path: Path) -> npt.NDArray[np.uint8]:
    """Pixels as an (height, width, 3) RGB array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, bytearray(), None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8, f"bit depth {depth} not handled"
    assert interlace == 0, "interlaced PNG not handled"
    channels = {2: 3, 6: 4}[colour]
    stride = width * channels
    raw = zlib.decompress(bytes(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        if kind == 0:
            line = row
        elif kind == 2:  # Up
            line = (row + previous) & 0xFF
        elif kind in (1, 3, 4):  # Sub, Average, Paeth depend on the pixel to the left: walk the row
            line = np.zeros(stride, dtype=np.int32)
            values = row.tolist()
            above = previous.tolist()
            result = [0] * stride
            for x in range(stride):
                left = result[x - channels] if x >= channels else 0
                up_left = above[x - channels] if x >= channels else 0
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + above[x]) // 2
                else:
                    predictor = _paeth(left, above[x], up_left)
                result[x] = (values[x] + predictor) & 0xFF
            line = np.array(result, dtype=np.int32)
        else:
            raise AssertionError(f"unknown PNG filter {kind}")
        out[y] = line
        previous = line
    return out.reshape(height, width, channels)[:, :, :3]
