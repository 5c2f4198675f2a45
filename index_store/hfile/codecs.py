"""The compression codecs of HFile blocks, by the trailer's code (HBase's ``Compression.Algorithm``
ordinals), both ways.

Every block of a file is compressed with the file's one codec, each on its own. GZ (every real
metadata table HFile here) is zlib's gzip stream; SNAPPY and LZ4 are Hadoop's block framing (a big
endian uncompressed length, then length-prefixed compressed chunks) around the raw format; ZSTD
and BZIP2 are their own streams. pyarrow decodes snappy, lz4 and zstd, the standard library gzip
and bzip2; LZO has no decoder here and is refused by name."""

from __future__ import annotations

import bz2
import struct
import zlib
from enum import IntEnum

import pyarrow as pa

__all__ = ["Codec", "CodecError", "UnsupportedCodec", "codec_of", "compress", "decompress"]

_INT = struct.Struct(">i")


class Codec(IntEnum):
    """HBase's compression algorithms, by the ordinal the trailer stores."""

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


class CodecError(ValueError):
    """Compressed bytes that do not decompress to the size the block header says."""


class UnsupportedCodec(ValueError):
    """A codec code unknown to HBase, or one this library has no decompressor for."""


# pyarrow's name for the raw format inside Hadoop's block framing, per codec.
_ARROW = {Codec.SNAPPY: "snappy", Codec.LZ4: "lz4_raw", Codec.ZSTD: "zstd"}


def codec_of(code: int) -> Codec:
    """The codec of a trailer's code; ``UnsupportedCodec`` naming it when none can decode it."""
    try:
        codec = Codec(code)
    except ValueError:
        raise UnsupportedCodec(
            f"compression codec code {code} is none of HBase's "
            f"({', '.join(f'{c.value}={c.name}' for c in Codec)})"
        ) from None
    if codec is Codec.LZO:
        raise UnsupportedCodec("compression codec LZO has no decompressor here (its library is GPL)")
    name = _ARROW.get(codec)
    if name is not None and not pa.Codec.is_available(name):
        raise UnsupportedCodec(f"compression codec {codec.name} needs pyarrow built with {name}")
    return codec


def decompress(codec: Codec, data: bytes | memoryview, size: int) -> bytes:
    """A block's payload of ``size`` bytes from its compressed bytes."""
    try:
        out = _decompress(codec, bytes(data), size)
    except (CodecError, UnsupportedCodec):
        raise
    except Exception as exc:  # zlib.error, OSError, pa.ArrowInvalid...: bytes the codec rejects
        raise CodecError(f"{codec.name} bytes do not decompress ({exc})") from exc
    if len(out) != size:
        raise CodecError(f"{codec.name} bytes decompress to {len(out)} bytes, not the header's {size}")
    return out


def _decompress(codec: Codec, data: bytes, size: int) -> bytes:
    if codec is Codec.NONE:
        return data[:size]
    if codec is Codec.GZ:
        return _gunzip(data)
    if codec is Codec.BZIP2:
        return bz2.decompress(data)
    if codec is Codec.ZSTD:
        return pa.Codec("zstd").decompress(data, decompressed_size=size, asbytes=True)
    if codec in (Codec.SNAPPY, Codec.LZ4):
        return _unframe(codec, data)
    raise UnsupportedCodec(f"compression codec {codec.name} has no decompressor here")


def _gunzip(data: bytes) -> bytes:
    """Every gzip member of ``data`` (Hadoop may write more than one)."""
    parts = []
    while data:
        inflater = zlib.decompressobj(wbits=31)
        parts.append(inflater.decompress(data))
        if not inflater.eof:
            raise CodecError("the gzip stream ends early")
        data = inflater.unused_data
    return b"".join(parts)


def _unframe(codec: Codec, data: bytes) -> bytes:
    """Hadoop's block framing: [uncompressed length, [compressed length, chunk]+]+."""
    arrow, parts, pos = pa.Codec(_ARROW[codec]), [], 0
    while pos < len(data):
        expected, pos = _int(data, pos, codec), pos + 4
        produced = 0
        while produced < expected:  # a run's chunks, until they add up to its length
            length, pos = _int(data, pos, codec), pos + 4
            if length < 0 or pos + length > len(data):
                raise CodecError(f"a {codec.name} chunk of {length} bytes runs past the block")
            chunk = data[pos : pos + length]
            # Raw snappy says its own length; a raw LZ4 chunk does not, and is taken to be the
            # rest of its run (Hadoop splits only runs above its buffer, larger than HBase's
            # blocks): a split LZ4 run fails as bytes that do not decompress, never misread.
            size = _snappy_length(chunk) if codec is Codec.SNAPPY else expected - produced
            out = arrow.decompress(chunk, decompressed_size=size, asbytes=True)
            if len(out) != size or produced + size > expected:
                raise CodecError(f"a {codec.name} chunk decompresses past its run of {expected} bytes")
            parts.append(out)
            produced += size
            pos += length
    return b"".join(parts)


def _int(data: bytes, pos: int, codec: Codec) -> int:
    if pos + 4 > len(data):
        raise CodecError(f"Hadoop {codec.name} framing ends inside a length")
    return int(_INT.unpack_from(data, pos)[0])


def _snappy_length(chunk: bytes) -> int:
    """The uncompressed length raw snappy starts with (a little-endian base-128 varint)."""
    value, shift = 0, 0
    for byte in chunk[:5]:
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise CodecError("a snappy chunk without its length")


def compress(codec: Codec, data: bytes) -> bytes:
    """``data`` compressed as an HFile block of ``codec`` (for the test writer)."""
    if codec is Codec.NONE:
        return data
    if codec is Codec.GZ:
        deflater = zlib.compressobj(6, zlib.DEFLATED, 31)
        return deflater.compress(data) + deflater.flush()
    if codec is Codec.BZIP2:
        return bz2.compress(data)
    if codec is Codec.ZSTD:
        return pa.Codec("zstd").compress(data, asbytes=True)
    if codec in (Codec.SNAPPY, Codec.LZ4):
        chunk = pa.Codec(_ARROW[codec]).compress(data, asbytes=True)
        return _INT.pack(len(data)) + _INT.pack(len(chunk)) + chunk if data else b""
    raise UnsupportedCodec(f"compression codec {codec.name} has no compressor here")
