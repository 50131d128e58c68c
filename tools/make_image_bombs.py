#!/usr/bin/env python3
"""Tiny image files that declare a huge image (12000x12000 = 1.44e8 pixels, over ravlt's
default --max-pixels of 2^27), one per format OpenCV's imdecode reads: the header and a
few bytes of data, nothing a decoder could finish. Written to tests/data/image/bombs/
(committed); tests/unit/formats/test_image.c checks that each is refused from its header, before any
decoder allocates. usage: tools/make_image_bombs.py [OUTDIR]"""
import os
import struct
import sys
import zlib

W = H = 12000
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "image", "bombs")
os.makedirs(out, exist_ok=True)
files = {}


def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)


files["bomb.png"] = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))
# JPEG: SOI, APP0, SOF0 (8-bit, 3 components), then EOI
sof = struct.pack(">BHHB", 8, H, W, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00"
files["bomb.jpg"] = (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
                     + b"\xff\xc0" + struct.pack(">H", 2 + len(sof)) + sof + b"\xff\xd9")
# BMP: BITMAPINFOHEADER, 24-bit, bottom-up
files["bomb.bmp"] = (b"BM" + struct.pack("<IHHI", 54 + 16, 0, 0, 54)
                     + struct.pack("<IiiHHIIiiII", 40, W, H, 1, 24, 0, 0, 2835, 2835, 0, 0) + b"\0" * 16)
# BMP, OS/2 core header (16-bit sides: 12000 fits)
files["bomb_core.bmp"] = (b"BM" + struct.pack("<IHHI", 26 + 16, 0, 0, 26)
                          + struct.pack("<IHHHH", 12, W, H, 1, 24) + b"\0" * 16)
# WebP: VP8X canvas (24-bit sides minus one), lossless VP8L (14-bit), lossy VP8 (14-bit)
vp8x = struct.pack("<I", 0) + (W - 1).to_bytes(3, "little") + (H - 1).to_bytes(3, "little")
files["bomb_vp8x.webp"] = b"RIFF" + struct.pack("<I", 4 + 8 + 10) + b"WEBP" + b"VP8X" + struct.pack("<I", 10) + vp8x
bits = (W - 1) | (H - 1) << 14
vp8l = b"\x2f" + struct.pack("<I", bits) + b"\0" * 8
files["bomb_vp8l.webp"] = b"RIFF" + struct.pack("<I", 4 + 8 + len(vp8l)) + b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l
vp8 = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", W, H) + b"\0" * 8
files["bomb_vp8.webp"] = b"RIFF" + struct.pack("<I", 4 + 8 + len(vp8)) + b"WEBP" + b"VP8 " + struct.pack("<I", len(vp8)) + vp8
files["bomb.pgm"] = b"P5\n# a comment\n%d %d\n255\n" % (W, H) + b"\0" * 16
files["bomb.ppm"] = b"P6 %d\t%d 255\n" % (W, H) + b"\0" * 16
files["bomb.pbm"] = b"P4\n%d %d\n" % (W, H) + b"\0" * 16
files["bomb.pam"] = b"P7\nWIDTH %d\nHEIGHT %d\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n" % (W, H) + b"\0" * 16
files["bomb.pfm"] = b"PF\n%d %d\n-1.0\n" % (W, H) + b"\0" * 16
files["bomb.ras"] = struct.pack(">8I", 0x59A66A95, W, H, 24, W * H * 3, 1, 0, 0) + b"\0" * 16
files["bomb.hdr"] = b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n" % (H, W) + b"\0" * 16


def ifd(le, big, entries):
    e = "<" if le else ">"
    if big:
        body = struct.pack(e + "Q", len(entries))
        for tag, typ, val in entries:
            body += struct.pack(e + "HHQ", tag, typ, 1) + (struct.pack(e + "H", val) + b"\0" * 6 if typ == 3 else
                                                           struct.pack(e + "I", val) + b"\0" * 4 if typ == 4 else
                                                           struct.pack(e + "Q", val))
        return body + struct.pack(e + "Q", 0)
    body = struct.pack(e + "H", len(entries))
    for tag, typ, val in entries:
        body += struct.pack(e + "HHI", tag, typ, 1) + (struct.pack(e + "H", val) + b"\0\0" if typ == 3 else struct.pack(e + "I", val))
    return body + struct.pack(e + "I", 0)


tags = [(256, 4, W), (257, 4, H), (258, 3, 8), (259, 3, 5), (262, 3, 2), (273, 4, 0), (277, 3, 3), (278, 4, H), (279, 4, 16)]
files["bomb_le.tif"] = b"II*\0" + struct.pack("<I", 8) + ifd(True, False, tags)
files["bomb_be.tif"] = b"MM\0*" + struct.pack(">I", 8) + ifd(False, False, [(256, 3, W), (257, 3, H)] + tags[2:])
files["bomb_big.tif"] = b"II+\0" + struct.pack("<HHQ", 8, 0, 16) + ifd(True, True, [(256, 16, W), (257, 16, H)] + tags[2:])
# JPEG 2000: codestream (SOC, SIZ: 3 components) and the same in a JP2 container
siz = struct.pack(">HHIIIIIIIIH", 41 + 6, 0, W, H, 0, 0, W, H, 0, 0, 3) + b"\x07\x01\x01" * 3
j2k = b"\xff\x4f" + b"\xff\x51" + siz + b"\xff\xd9"
files["bomb.j2k"] = j2k
ihdr = struct.pack(">IIHBBBB", H, W, 3, 7, 7, 0, 0)
jp2h = struct.pack(">I", 8 + 8 + len(ihdr)) + b"jp2h" + struct.pack(">I", 8 + len(ihdr)) + b"ihdr" + ihdr
files["bomb.jp2"] = (b"\0\0\0\x0cjP  \r\n\x87\n" + struct.pack(">I", 20) + b"ftypjp2 \0\0\0\0jp2 " + jp2h
                     + struct.pack(">I", 8 + len(j2k)) + b"jp2c" + j2k)


def attr(name, typ, value):
    return name + b"\0" + typ + b"\0" + struct.pack("<I", len(value)) + value


exr = (struct.pack("<II", 20000630, 2)
       + attr(b"channels", b"chlist", b"R\0" + struct.pack("<IBxxxii", 1, 0, 1, 1) + b"\0")
       + attr(b"compression", b"compression", b"\0")
       + attr(b"dataWindow", b"box2i", struct.pack("<4i", 0, 0, W - 1, H - 1))
       + attr(b"displayWindow", b"box2i", struct.pack("<4i", 0, 0, W - 1, H - 1))
       + attr(b"lineOrder", b"lineOrder", b"\0")
       + attr(b"pixelAspectRatio", b"float", struct.pack("<f", 1))
       + attr(b"screenWindowCenter", b"v2f", struct.pack("<2f", 0, 0))
       + attr(b"screenWindowWidth", b"float", struct.pack("<f", 1)) + b"\0")
files["bomb.exr"] = exr + b"\0" * 16

for name, data in sorted(files.items()):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")
