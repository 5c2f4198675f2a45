"""Bloom filters on column values: one per (column, data file), probed for equality / IN pruning.

Every key is hashed once with MurmurHash3 x64_128 (seed 0) over a canonical byte encoding of its
value (see :func:`hash_keys`), and the ``k`` bit positions come from double hashing
``(h1 + i * h2) mod m``. Hashing, adding and probing are vectorized over arrays of keys, and
:class:`BloomFilterSet` probes one value against the filters of many files at once.

Nulls: ``add_all`` ignores null keys and ``might_contain`` answers False for them, because
``col = NULL`` is never TRUE.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
from bitarray import bitarray

from hudi_expr._murmur3 import hash_binary, hash_words
from hudi_expr.errors import HudiExprError

__all__ = ["BloomFilter", "BloomFilterFormatError", "BloomFilterSet", "hash_keys", "serialized_filters"]

_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_MS_PER_DAY = 86_400_000

# Serialized form: magic, format version, num_hashes (k), num_bits (m), then the m/8 bytes of the
# little-endian bit array. The 16-byte header keeps the payload 8-byte aligned after it.
_MAGIC = b"HXBF"
_VERSION = 1
_HEADER = struct.Struct("<4sHHQ")
_MAX_HASHES = 0xFFFF

Values: TypeAlias = pa.Array | pa.ChunkedArray | np.ndarray | Sequence[Any]


class BloomFilterFormatError(HudiExprError, ValueError):
    """Serialized bloom filter bytes are truncated, corrupt or of an unknown format."""


# ---------------------------------------------------------------------------------------------
# Canonical key encoding


def hash_keys(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """MurmurHash3 x64_128 ``(h1, h2)`` (uint64 arrays) of each value's canonical bytes.

    The encoding depends on the value, not the column width, so a literal bound to the column
    type hashes like the stored values whatever their physical type:

    - integers and bool: the value as int64, 8 bytes little-endian (uint64 wraps to the same bytes);
    - float16/32/64: as float64 with -0.0 -> 0.0 and every NaN -> 0x7FF8000000000000;
    - date32/date64: int64 days; time, timestamp (any unit and zone), duration: the stored int64
      in its own unit;
    - decimal128/256: the 16/32-byte little-endian two's complement unscaled value;
    - string, binary and their large/view/fixed-size variants: the UTF-8 or raw bytes.

    Null entries hash to ``(0, 0)``; callers tell them apart by the array's validity.
    """
    h1, h2, _ = _hash_with_validity(values)
    return h1, h2


def _hash_with_validity(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(values, pa.ChunkedArray):
        parts = [_hash_array(chunk) for chunk in values.chunks]
        if not parts:
            empty = np.zeros(0, dtype=np.uint64)
            return empty, empty.copy(), np.zeros(0, dtype=bool)
        h1s, h2s, valids = zip(*parts, strict=True)
        return np.concatenate(h1s), np.concatenate(h2s), np.concatenate(valids)
    return _hash_array(values)


def _hash_array(array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    n = len(array)
    if pa.types.is_null(array.type):
        zeros = np.zeros(n, dtype=np.uint64)
        return zeros, zeros.copy(), np.zeros(n, dtype=bool)
    h1, h2 = _hash_canonical(array)
    if array.null_count == 0:
        return h1, h2, np.ones(n, dtype=bool)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    h1[~valid] = 0
    h2[~valid] = 0
    return h1, h2, valid


def _hash_canonical(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    t = array.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return _hash_int64(array.fill_null(0 if pa.types.is_integer(t) else False))
    if pa.types.is_floating(t):
        with np.errstate(invalid="ignore"):  # arithmetic on a signalling NaN flags "invalid"
            floats = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
            floats = floats + 0.0  # -0.0 + 0.0 == +0.0 under round-to-nearest
        bits = floats.view(np.uint64)
        bits[np.isnan(floats)] = _CANONICAL_NAN
        return hash_words(bits[:, None])
    if pa.types.is_date64(t):
        millis = array.view(pa.int64()).fill_null(0).to_numpy()
        return hash_words(np.floor_divide(millis, _MS_PER_DAY).view(np.uint64)[:, None])
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return _hash_int64(array.view(pa.int32()).fill_null(0))
    if pa.types.is_time64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return _hash_int64(array.view(pa.int64()).fill_null(0))
    if pa.types.is_decimal(t) and t.byte_width in (16, 32):
        # Same bytes as arrow's buffer: fixed-size binary of the decimal's width.
        return hash_binary(array.view(pa.binary(t.byte_width)))
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return hash_binary(array.view(pa.binary()))
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return hash_binary(array.view(pa.large_binary()))
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return hash_binary(array.cast(pa.large_binary()))
    if pa.types.is_fixed_size_binary(t):
        return hash_binary(array)
    raise TypeError(f"bloom filters do not support values of type {t}")


def _hash_int64(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    ints = array.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return hash_words(ints.view(np.uint64)[:, None])


def _as_array(values: Values, type: pa.DataType | None) -> pa.Array | pa.ChunkedArray:
    """Arrow array of ``values``, cast to ``type`` when given (the column type: say it when
    inference could pick another encoding, e.g. Python ints probing a float column)."""
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values if type is None or values.type == type else values.cast(type)
    if isinstance(values, str | bytes | bytearray | memoryview) or not isinstance(values, Iterable):
        raise TypeError(f"expected an array or sequence of values, got {values!r}; wrap one value in a list")
    if not isinstance(values, np.ndarray | Sequence):
        values = list(values)
    return pa.array(values, type=type)


def _as_single(value: Any, type: pa.DataType | None) -> pa.Array:
    if isinstance(value, pa.Scalar):
        type = type or value.type
        value = value.as_py()
    return pa.array([value], type=type)


# ---------------------------------------------------------------------------------------------
# One filter


class BloomFilter:
    """A bloom filter of ``num_bits`` bits (a positive multiple of 64) and ``num_hashes`` hashes."""

    __slots__ = ("_bits", "_num_hashes")
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(self, num_bits: int, num_hashes: int) -> None:
        if num_bits < 64 or num_bits % 64:
            raise ValueError(f"num_bits must be a positive multiple of 64, got {num_bits}")
        if not 1 <= num_hashes <= _MAX_HASHES:
            raise ValueError(f"num_hashes must be in [1, {_MAX_HASHES}], got {num_hashes}")
        self._bits = bitarray(num_bits, endian="little")
        self._bits.setall(0)
        self._num_hashes = num_hashes

    @classmethod
    def for_entries(cls, expected_entries: int, fpp: float) -> BloomFilter:
        """Filter sized for ``expected_entries`` distinct keys at false-positive rate ``fpp``:
        ``m = ceil(-n ln p / ln(2)^2)`` rounded up to a multiple of 64, ``k = round(m / n ln 2)``."""
        if expected_entries < 1:
            raise ValueError(f"expected_entries must be >= 1, got {expected_entries}")
        if not 0.0 < fpp < 1.0:
            raise ValueError(f"fpp must be in (0, 1), got {fpp}")
        return cls(*_shape(expected_entries, fpp))

    @property
    def num_bits(self) -> int:
        return len(self._bits)

    @property
    def num_hashes(self) -> int:
        return self._num_hashes

    def _bytes(self) -> np.ndarray:
        return np.frombuffer(memoryview(self._bits), dtype=np.uint8)

    def add(self, value: Any, type: pa.DataType | None = None) -> None:
        """Add one value (ignored if null)."""
        self.add_all(_as_single(value, type))

    def add_all(self, values: Values, type: pa.DataType | None = None) -> None:
        """Add every non-null value, setting all their bits in one vectorized pass."""
        h1, h2, valid = _hash_with_validity(_as_array(values, type))
        if not valid.all():
            h1, h2 = h1[valid], h2[valid]
        self.add_hashes(h1, h2)

    def add_hashes(self, h1: np.ndarray, h2: np.ndarray) -> None:
        """Add the keys whose ``hash_keys`` are ``(h1, h2)`` (hash many keys once, add them to
        several filters)."""
        if h1.size == 0:
            return
        m = np.uint64(self.num_bits)
        target = self._bytes()
        # Many keys: mark a bool per bit and pack once (one pass over m beats ufunc.at's
        # per-element cost); few keys: OR their bits into the bytes directly.
        many = h1.size * self._num_hashes * 8 >= self.num_bits
        dense = np.zeros(self.num_bits, dtype=bool) if many else None
        for i in range(self._num_hashes):
            positions = (h1 + np.uint64(i) * h2) % m
            if dense is not None:
                dense[positions] = True
            else:
                bits = np.left_shift(np.uint8(1), (positions & np.uint64(7)).astype(np.uint8))
                np.bitwise_or.at(target, positions >> np.uint64(3), bits)
        if dense is not None:
            target |= np.packbits(dense, bitorder="little")

    def might_contain(self, values: Values, type: pa.DataType | None = None) -> np.ndarray:
        """Per value: False if it was certainly never added (or is null), True if it may have been."""
        h1, h2, valid = _hash_with_validity(_as_array(values, type))
        result = np.zeros(len(h1), dtype=bool)
        candidates = np.flatnonzero(valid)
        m = np.uint64(self.num_bits)
        bytes_ = self._bytes()
        for i in range(self._num_hashes):
            # Keep only the keys whose bits were all set so far: most absent keys drop out early.
            positions = (h1[candidates] + np.uint64(i) * h2[candidates]) % m
            hit = (bytes_[positions >> np.uint64(3)] >> (positions & np.uint64(7)).astype(np.uint8)) & 1
            candidates = candidates[hit.astype(bool)]
            if candidates.size == 0:
                break
        result[candidates] = True
        return result

    def __contains__(self, value: object) -> bool:
        return bool(self.might_contain(_as_single(value, None))[0])

    def approx_fpp(self) -> float:
        """False-positive probability implied by the current fill ratio: ``(set bits / m) ** k``."""
        return (self._bits.count(1) / self.num_bits) ** self._num_hashes

    def to_bytes(self) -> bytes:
        """Versioned serialized form, read back by :meth:`from_bytes` and :class:`BloomFilterSet`."""
        return _HEADER.pack(_MAGIC, _VERSION, self._num_hashes, self.num_bits) + self._bits.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> BloomFilter:
        """Parse :meth:`to_bytes` output; raises :class:`BloomFilterFormatError` on anything else."""
        data = bytes(data)
        if len(data) < _HEADER.size:
            raise BloomFilterFormatError(
                f"bloom filter truncated: {len(data)} bytes, header needs {_HEADER.size}"
            )
        magic, version, num_hashes, num_bits = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise BloomFilterFormatError(f"not a bloom filter: magic {magic!r}, expected {_MAGIC!r}")
        if version != _VERSION:
            raise BloomFilterFormatError(f"unsupported bloom filter format version {version}")
        if num_hashes < 1 or num_bits < 64 or num_bits % 64:
            raise BloomFilterFormatError(f"corrupt bloom filter header: k={num_hashes}, m={num_bits}")
        if len(data) != _HEADER.size + num_bits // 8:
            raise BloomFilterFormatError(
                f"bloom filter of {num_bits} bits needs {_HEADER.size + num_bits // 8} bytes, got {len(data)}"
            )
        return cls._from_payload(num_bits, num_hashes, data[_HEADER.size :])

    @classmethod
    def _from_payload(cls, num_bits: int, num_hashes: int, payload: bytes) -> BloomFilter:
        self = cls.__new__(cls)
        self._bits = bitarray(endian="little")
        self._bits.frombytes(payload)
        self._num_hashes = num_hashes
        assert len(self._bits) == num_bits
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomFilter):
            return NotImplemented
        return self._num_hashes == other._num_hashes and self._bits == other._bits

    def __repr__(self) -> str:
        fill = self._bits.count(1) / self.num_bits
        return f"BloomFilter(num_bits={self.num_bits}, num_hashes={self._num_hashes}, fill={fill:.4f})"


def _shape(expected_entries: int, fpp: float) -> tuple[int, int]:
    """``(num_bits, num_hashes)`` of ``BloomFilter.for_entries``."""
    bits = math.ceil(-expected_entries * math.log(fpp) / math.log(2) ** 2)
    bits = -(-bits // 64) * 64
    hashes = max(1, round(bits / expected_entries * math.log(2)))
    return bits, min(hashes, _MAX_HASHES)


# Filters whose bits together stay below this many are filled in one pass (a bool per bit: about
# a CPU's L2 cache; one pass over bigger arrays measured slower than a filter at a time).
_PASS_BITS = 1 << 18


def serialized_filters(h1: np.ndarray, h2: np.ndarray, counts: Sequence[int], fpp: float) -> list[bytes]:
    """``to_bytes`` of one filter per run of keys: run i is the next ``counts[i]`` of the hashes
    ``(h1, h2)`` and its filter is ``for_entries(max(counts[i], 1), fpp)`` holding them. The same
    bytes as building each filter alone; many small filters are filled in one vectorized pass (a
    filter of a few keys otherwise costs more in numpy calls than in work)."""
    if not 0.0 < fpp < 1.0:
        raise ValueError(f"fpp must be in (0, 1), got {fpp}")
    counts_ = np.asarray(counts, dtype=np.int64)
    if int(counts_.sum()) != len(h1) or len(h2) != len(h1):
        raise ValueError(f"{len(h1)} hashes for runs of {int(counts_.sum())} keys")
    shapes = np.array([_shape(max(int(c), 1), fpp) for c in counts_], dtype=np.int64).reshape(-1, 2)
    bits, hashes = shapes[:, 0], shapes[:, 1]
    bit_start = np.concatenate([[0], np.cumsum(bits)])
    key_start = np.concatenate([[0], np.cumsum(counts_)])
    # Consecutive runs starting in one window of _PASS_BITS bits share a pass.
    window = bit_start[:-1] // _PASS_BITS
    cuts = np.flatnonzero(np.diff(window, prepend=-1, append=-2)).tolist()
    out: list[bytes] = []
    for a, b in itertools.pairwise(cuts):
        lo, hi = int(key_start[a]), int(key_start[b])
        x1, x2 = h1[lo:hi], h2[lo:hi]
        m: np.ndarray | np.uint64
        base: np.ndarray | np.uint64
        if b - a == 1:  # one filter: its size and offset are scalars
            m, base, k = np.uint64(bits[a]), np.uint64(0), np.full(hi - lo, hashes[a])
        else:
            run = np.repeat(np.arange(a, b), counts_[a:b])
            m, base, k = (
                bits.astype(np.uint64)[run],
                (bit_start[run] - bit_start[a]).astype(np.uint64),
                hashes[run],
            )
        dense = np.zeros(int(bit_start[b] - bit_start[a]), dtype=bool)
        for i in range(int(hashes[a:b].max())):
            take = k > i
            if take.all():
                dense[(x1 + np.uint64(i) * x2) % m + base] = True
            else:
                dense[(x1[take] + np.uint64(i) * x2[take]) % m[take] + base[take]] = True  # type: ignore[index]
        packed = np.packbits(dense, bitorder="little").tobytes()
        for r in range(a, b):
            at = int(bit_start[r] - bit_start[a]) // 8
            header = _HEADER.pack(_MAGIC, _VERSION, int(hashes[r]), int(bits[r]))
            out.append(header + packed[at : at + int(bits[r]) // 8])
    return out


# ---------------------------------------------------------------------------------------------
# Many files' filters


class BloomFilterSet:
    """Optional bloom filters of N data files, packed into one byte buffer so that probing a value
    against all of them is vectorized across files.

    A file without a filter may contain anything: its answers are always True.
    """

    __slots__ = ("_buffer", "_has_filter", "_num_bits", "_num_hashes", "_offsets")

    def __init__(
        self,
        buffer: np.ndarray,
        offsets: np.ndarray,
        num_bits: np.ndarray,
        num_hashes: np.ndarray,
        has_filter: np.ndarray,
    ) -> None:
        """Low-level: use :meth:`from_filters` or :meth:`from_arrow`. File ``i``'s bit array is
        ``buffer[offsets[i] : offsets[i] + num_bits[i] // 8]`` where ``has_filter[i]``."""
        self._buffer = buffer
        self._offsets = offsets
        self._num_bits = num_bits
        self._num_hashes = num_hashes
        self._has_filter = has_filter

    @classmethod
    def from_filters(cls, filters: Sequence[BloomFilter | None]) -> BloomFilterSet:
        """Pack the given filters (``None``: that file has no filter)."""
        serialized = [None if f is None else f.to_bytes() for f in filters]
        return cls.from_arrow(pa.array(serialized, type=pa.large_binary()))

    @classmethod
    def from_arrow(cls, serialized: pa.BinaryArray | pa.LargeBinaryArray | pa.ChunkedArray) -> BloomFilterSet:
        """One entry per file: :meth:`BloomFilter.to_bytes` output, or null for no filter. The bit
        arrays are used in place in the arrow data buffer (no copy); headers are parsed vectorized."""
        if isinstance(serialized, pa.ChunkedArray):
            serialized = serialized.combine_chunks()
        t = serialized.type
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            raise TypeError(f"expected a binary or large_binary array, got {t}")
        n = len(serialized)
        offset_type = np.int64 if pa.types.is_large_binary(t) else np.int32
        _, offsets_buf, data_buf = serialized.buffers()
        window = slice(serialized.offset, serialized.offset + n + 1)
        bounds: np.ndarray = np.frombuffer(offsets_buf, dtype=offset_type)[window].astype(np.int64)
        data = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
        starts, lengths = bounds[:-1], np.diff(bounds)
        has_filter = serialized.is_valid().to_numpy(zero_copy_only=False)

        num_bits = np.zeros(n, dtype=np.uint64)
        num_hashes = np.zeros(n, dtype=np.int64)
        present = np.flatnonzero(has_filter)
        ok = lengths[present] >= _HEADER.size
        if ok.all() and present.size:
            header = data[starts[present, None] + np.arange(_HEADER.size)]
            magic_ok = (header[:, :4] == np.frombuffer(_MAGIC, dtype=np.uint8)).all(axis=1)
            version = header[:, 4:6].copy().view("<u2")[:, 0]
            k = header[:, 6:8].copy().view("<u2")[:, 0].astype(np.int64)
            m = header[:, 8:16].copy().view("<u8")[:, 0].astype(np.uint64)
            ok = (
                magic_ok
                & (version == _VERSION)
                & (k >= 1)
                & (m >= 64)
                & (m % np.uint64(64) == 0)
                & (lengths[present] == _HEADER.size + (m // np.uint64(8)).astype(np.int64))
            )
            num_bits[present] = m
            num_hashes[present] = k
        if not ok.all():
            bad = int(present[np.flatnonzero(~ok)[0]])
            try:
                BloomFilter.from_bytes(serialized[bad].as_py())
            except BloomFilterFormatError as error:
                raise BloomFilterFormatError(f"entry {bad}: {error}") from None
            raise BloomFilterFormatError(f"entry {bad}: corrupt bloom filter")  # pragma: no cover
        return cls(data, starts + _HEADER.size, num_bits, num_hashes, has_filter)

    def __len__(self) -> int:
        return len(self._has_filter)

    @property
    def has_filter(self) -> np.ndarray:
        """Per file: whether it has a bloom filter."""
        return self._has_filter.copy()

    def __getitem__(self, i: int) -> BloomFilter | None:
        i = range(len(self))[i]
        if not self._has_filter[i]:
            return None
        start, num_bits = int(self._offsets[i]), int(self._num_bits[i])
        payload = self._buffer[start : start + num_bits // 8].tobytes()
        return BloomFilter._from_payload(num_bits, int(self._num_hashes[i]), payload)

    def take(self, indices: np.ndarray) -> BloomFilterSet:
        """The filters of the given files (integer indices or a boolean mask), sharing the buffer."""
        indices = np.asarray(indices)
        return BloomFilterSet(
            self._buffer,
            self._offsets[indices],
            self._num_bits[indices],
            self._num_hashes[indices],
            self._has_filter[indices],
        )

    def might_contain(self, value: Any, type: pa.DataType | None = None) -> np.ndarray:
        """Per file: may its filter contain ``value``? True for files without a filter.

        ``value`` must not be null (``col = NULL`` is never TRUE: simplify it away before probing);
        a null raises ValueError.
        """
        h1, h2, valid = _hash_with_validity(_as_single(value, type))
        if not valid[0]:
            raise ValueError("cannot probe bloom filters for NULL: `col = NULL` is never TRUE")
        return self._probe_any(h1, h2)

    def might_contain_any(self, values: Values, type: pa.DataType | None = None) -> np.ndarray:
        """Per file: may its filter contain at least one of ``values``? (IN-list pruning.)

        Null values never match (``col IN (.., NULL)`` is never TRUE because of the NULL), so with
        no non-null values the answer is False for every file, even those without a filter.
        """
        h1, h2, valid = _hash_with_validity(_as_array(values, type))
        if not valid.all():
            h1, h2 = h1[valid], h2[valid]
        return self._probe_any(h1, h2)

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        """``Membership``: False where no filter bit set admits any of ``values`` (a bloom filter
        has no false negatives); True where one may be there, or the file has no filter."""
        return pa.array(self.might_contain_any(values, type=values.type))

    def _probe_any(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        if h1.size == 0:
            return np.zeros(len(self), dtype=bool)
        result = ~self._has_filter
        files = np.flatnonzero(self._has_filter)
        if files.size == 0:
            return result
        m = self._num_bits[files, None]
        k = self._num_hashes[files, None]
        base = self._offsets[files, None]
        max_k = int(k.max())
        # Broadcast files x values in chunks of about a million cells.
        chunk = max(1, (1 << 20) // files.size)
        for lo in range(0, h1.size, chunk):
            a, b = h1[None, lo : lo + chunk], h2[None, lo : lo + chunk]
            hit = np.ones((files.size, a.shape[1]), dtype=bool)
            for i in range(max_k):
                positions = (a + np.uint64(i) * b) % m
                byte = self._buffer[base + (positions >> np.uint64(3)).astype(np.int64)]
                bit = (byte >> (positions & np.uint64(7)).astype(np.uint8)) & 1
                hit &= bit.astype(bool) | (i >= k)  # hashes past a file's own k do not count
            result[files] |= hit.any(axis=1)
        return result

    def __repr__(self) -> str:
        return f"BloomFilterSet(files={len(self)}, with_filter={int(self._has_filter.sum())})"
