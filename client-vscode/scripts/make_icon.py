"""Draw the extension's icon (images/icon.png, 128x128) with the standard library.

A sounding curve (apparent resistivity against period, as in an MT/CSAMT plot)
with its data points, on a dark rounded square. Pure Python (zlib + struct), so
the icon can be redrawn anywhere without an imaging library:
``python3 client-vscode/scripts/make_icon.py``.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from pathlib import Path

SIZE = 128
SS = 4  # supersampling per axis, for smooth edges
BG = (23, 50, 79)
AXIS = (64, 104, 145)
CURVE = (242, 154, 46)
DOT = (255, 255, 255)


def _bezier(p: list[tuple[float, float]], n: int = 200) -> list[tuple[float, float]]:
    """Points along a cubic Bezier curve (4 control points)."""
    out = []
    for i in range(n + 1):
        t = i / n
        a, b, c, d = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t**3
        out.append(
            (
                a * p[0][0] + b * p[1][0] + c * p[2][0] + d * p[3][0],
                a * p[0][1] + b * p[1][1] + c * p[2][1] + d * p[3][1],
            )
        )
    return out


def _seg_dist(
    px: float, py: float, a: tuple[float, float], b: tuple[float, float]
) -> float:
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    L = dx * dx + dy * dy
    t = 0.0 if L == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / L))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def _in_round_rect(
    x: float, y: float, x0: float, y0: float, x1: float, y1: float, r: float
) -> bool:
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def render() -> bytes:
    curve = _bezier([(22, 86), (50, 88), (52, 26), (76, 34)]) + _bezier(
        [(76, 34), (96, 40), (98, 66), (108, 68)]
    )
    segs = list(itertools.pairwise(curve))
    dots = [(34, 84), (50, 72), (64, 45), (84, 38), (102, 62)]
    rows = []
    for y in range(SIZE):
        row = bytearray([0])  # filter type 0
        for x in range(SIZE):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(SS):
                for sx in range(SS):
                    px = x + (sx + 0.5) / SS
                    py = y + (sy + 0.5) / SS
                    if not _in_round_rect(px, py, 4, 4, 124, 124, 22):
                        continue
                    col = BG
                    if (abs(py - 102) < 1.2 and 20 <= px <= 110) or (
                        abs(px - 20) < 1.2 and 20 <= py <= 102
                    ):
                        col = AXIS
                    near = [
                        s
                        for s in segs
                        if abs(s[0][0] - px) < 8 and abs(s[0][1] - py) < 40
                    ]
                    if any(_seg_dist(px, py, a, b) < 3.2 for a, b in near):
                        col = CURVE
                    if any(math.hypot(px - dx, py - dy) < 4.6 for dx, dy in dots):
                        col = DOT
                    acc[0] += col[0]
                    acc[1] += col[1]
                    acc[2] += col[2]
                    acc[3] += 255
            n = SS * SS
            alpha = acc[3] / n
            # straight (not premultiplied) colour of the covered samples
            rgb = (
                [round(acc[i] * 255 / acc[3]) for i in range(3)]
                if acc[3]
                else [0, 0, 0]
            )
            row += bytes([*rgb, round(alpha)])
        rows.append(bytes(row))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + tag
            + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "images" / "icon.png"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(render())
    print(f"{out}: {out.stat().st_size} bytes")
