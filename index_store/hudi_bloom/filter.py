"""``HudiBloomFilter``: one SIMPLE or DYNAMIC_V0 filter, read, probed, grown and written bit-exact."""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from index_store.hudi_bloom.format import (
    _DYNAMIC,
    _HEADER,
    _VERSION,
    BLOOM_FOOTER_KEY,
    DEFAULT_FPP,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    DYNAMIC_V0,
    MURMUR_HASH,
    OLD_BLOOM_FOOTER_KEY,
    SIMPLE,
    TYPE_CODE_FOOTER_KEY,
    TYPE_CODES,
    HudiBloomFormatError,
    Keys,
    _java_int,
    hudi_bloom_size,
)
from index_store.hudi_bloom.hashing import _as_binary, _MurmurChain, _positions, _valid_buffers
from index_store.hudi_bloom.units import _probe_entries, _Units


class HudiBloomFilter:
    """One Hudi bloom filter, ``SIMPLE`` or ``DYNAMIC_V0``, bit-exact with Hudi's Java classes.

    Read one with :meth:`from_footer` (a base file's parquet metadata), :meth:`from_serialized`
    (the footer's base64 text) or :meth:`from_bytes`; make one with :meth:`create` (sized as Hudi
    sizes it). :meth:`add_all` adds keys in order, exactly as Hudi's writer would (a ``DYNAMIC_V0``
    filter grows a row every ``nr`` keys up to its bound, then cycles over its rows), and
    :meth:`to_serialized` gives what Hudi writes to the footer.
    """

    __slots__ = (
        "_current",
        "_cursor",
        "_max_entries",
        "_reached_max",
        "_rows",
        "_type_code",
        "hash_type",
        "num_bits",
        "num_hashes",
        "row_capacity",
    )
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(
        self,
        type_code: str,
        num_bits: int,
        num_hashes: int,
        rows: np.ndarray,
        row_capacity: int = 0,
        current: int = 0,
        max_entries: int = 0,
        hash_type: int = MURMUR_HASH,
    ) -> None:
        """Low level: use :meth:`create`, :meth:`from_footer` or :meth:`from_serialized`.
        ``rows``: uint8 array of shape (rows, ceil(num_bits / 8)), the serialized bit bytes."""
        self._type_code = _type_code(type_code)
        if not 1 <= num_bits < 1 << 31 or not 1 <= num_hashes < 1 << 31:
            raise ValueError(f"bad filter size: m={num_bits}, k={num_hashes}")
        if hash_type != MURMUR_HASH:
            raise ValueError(f"hash type {hash_type} is not Murmur ({MURMUR_HASH}): not supported")
        if (
            rows.dtype != np.uint8
            or rows.ndim != 2
            or rows.shape[0] < 1
            or rows.shape[1] != (num_bits + 7) // 8
        ):
            raise ValueError(f"rows must be uint8 of shape (n >= 1, {(num_bits + 7) // 8}), got {rows.shape}")
        if self._type_code == SIMPLE and rows.shape[0] != 1:
            raise ValueError(f"a SIMPLE filter has one bit array, got {rows.shape[0]}")
        if self._type_code == DYNAMIC_V0 and row_capacity < 1:
            raise ValueError(f"a DYNAMIC_V0 filter holds at least one key per row, got {row_capacity}")
        self.num_bits = num_bits
        self.num_hashes = num_hashes
        self.hash_type = hash_type
        self._rows = rows
        # DYNAMIC_V0 state (InternalDynamicBloomFilter): nr, currentNbRecord, maxNr, reachedMax,
        # curMatrixIndex. Java serializes only the first two: maxNr of a filter read back is 0.
        self.row_capacity = row_capacity
        self._current = current
        self._max_entries = max_entries
        self._reached_max = False
        self._cursor = 0

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        type_code: str = DYNAMIC_V0,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> HudiBloomFilter:
        """An empty filter as Hudi's ``BloomFilterFactory.createBloomFilter`` makes it: ``m`` and
        ``k`` from :func:`hudi_bloom_size`; a ``DYNAMIC_V0`` filter starts with one row, holds
        ``num_entries`` keys per row and adds rows while ``rows * num_entries < max_entries``."""
        type_code = _type_code(type_code)
        num_bits, num_hashes = hudi_bloom_size(num_entries, fpp)
        rows = np.zeros((1, (num_bits + 7) // 8), dtype=np.uint8)
        if type_code == SIMPLE:
            return cls(SIMPLE, num_bits, num_hashes, rows)
        return cls(DYNAMIC_V0, num_bits, num_hashes, rows, num_entries, 0, max_entries)

    @classmethod
    def from_footer(cls, metadata: Any) -> HudiBloomFilter | None:
        """The filter in a base file's footer (``pyarrow.parquet.FileMetaData`` or its ``metadata``
        mapping, bytes or str keys), or None when the footer has none (e.g. a table written with
        ``hoodie.populate.meta.fields=false``). Reads the key and type code as Hudi's
        ``readBloomFilterFromMetadata`` does; a corrupt value raises :class:`HudiBloomFormatError`."""
        footer = _footer(metadata)
        text = footer.get(BLOOM_FOOTER_KEY)
        if text is None:
            text = footer.get(OLD_BLOOM_FOOTER_KEY)
        if text is None:
            return None
        return cls.from_serialized(text, footer.get(TYPE_CODE_FOOTER_KEY))

    @classmethod
    def from_serialized(cls, text: str | bytes, type_code: str | bytes | None = None) -> HudiBloomFilter:
        """Parse a footer value: base64 text (str, or its ASCII bytes as pyarrow returns it) of the
        serialized filter of ``type_code`` (None: ``SIMPLE``, as Hudi reads a footer without one)."""
        raw = text.encode("ascii", "replace") if isinstance(text, str) else bytes(text)
        raw += b"=" * (-len(raw) % 4)  # java.util.Base64's decoder does not require the padding
        try:
            decoded = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise HudiBloomFormatError(f"Hudi bloom filter is not valid base64 ({exc})") from None
        return cls.from_bytes(decoded, type_code)

    @classmethod
    def from_bytes(
        cls, data: bytes | bytearray | memoryview, type_code: str | bytes | None = None
    ) -> HudiBloomFilter:
        """Parse the decoded (binary) serialized form of a ``type_code`` filter."""
        try:
            code = _type_code(type_code)
        except ValueError as exc:
            raise HudiBloomFormatError(str(exc)) from None
        data = bytes(data)
        num_hashes, num_bits, at = _read_header(data, 0)
        if code == SIMPLE:
            row, at = _read_bits(data, at, num_bits)
            _expect_end(data, at)
            return cls(SIMPLE, num_bits, num_hashes, row[None, :])
        if len(data) < at + _DYNAMIC.size:
            raise HudiBloomFormatError(f"DYNAMIC_V0 bloom filter truncated at {len(data)} bytes")
        row_capacity, current, num_rows = _DYNAMIC.unpack_from(data, at)
        at += _DYNAMIC.size
        if row_capacity < 1 or current < 0 or num_rows < 1:
            raise HudiBloomFormatError(
                f"corrupt DYNAMIC_V0 bloom filter: nr={row_capacity}, current={current}, rows={num_rows}"
            )
        row_bytes = (num_bits + 7) // 8
        if len(data) < at + num_rows * (_HEADER.size + row_bytes):
            raise HudiBloomFormatError(
                f"DYNAMIC_V0 bloom filter of {num_rows} rows of {num_bits} bits needs "
                f"{at + num_rows * (_HEADER.size + row_bytes)} bytes, got {len(data)}"
            )
        rows = np.empty((num_rows, row_bytes), dtype=np.uint8)
        for r in range(num_rows):
            k, m, at = _read_header(data, at)
            if (k, m) != (num_hashes, num_bits):
                raise HudiBloomFormatError(
                    f"DYNAMIC_V0 row {r} has k={k}, m={m}, the filter k={num_hashes}, m={num_bits}"
                )
            rows[r], at = _read_bits(data, at, num_bits)
        _expect_end(data, at)
        return cls(DYNAMIC_V0, num_bits, num_hashes, rows, row_capacity, current)

    # -- properties -------------------------------------------------------------------------

    @property
    def type_code(self) -> str:
        """``SIMPLE`` or ``DYNAMIC_V0``."""
        return self._type_code

    @property
    def num_rows(self) -> int:
        """Bit arrays in the filter: 1 for SIMPLE; DYNAMIC_V0 grows one per ``row_capacity`` keys."""
        return int(self._rows.shape[0])

    @property
    def active_row_count(self) -> int:
        """DYNAMIC_V0: keys added since the active row was opened (Java's ``currentNbRecord``,
        serialized; it keeps counting once the bound is reached). 0 for SIMPLE."""
        return self._current

    @property
    def max_entries(self) -> int:
        """DYNAMIC_V0: the bound on ``rows * row_capacity`` (``maxNr``). Not serialized by Hudi: 0
        for a filter read back, which (as in Java) then cycles over its rows once one is full."""
        return self._max_entries

    def rows(self) -> np.ndarray:
        """The bit arrays as stored (uint8, shape ``(num_rows, ceil(num_bits / 8))``, LSB-first);
        a copy."""
        return self._rows.copy()

    def set_bits(self, row: int = 0) -> np.ndarray:
        """Positions of the set bits of ``row``, ascending (int64)."""
        bits = np.unpackbits(self._rows[row], bitorder="little")[: self.num_bits]
        return np.flatnonzero(bits)

    def bit_count(self) -> int:
        """Set bits over all rows."""
        return int(np.bitwise_count(self._rows).sum(dtype=np.int64))

    def estimated_fpp(self) -> float:
        """False-positive probability implied by the rows' fill: ``1 - prod(1 - fill_r ** k)``
        (a key is a false positive when any row admits it)."""
        fill = np.bitwise_count(self._rows).sum(axis=1, dtype=np.int64) / self.num_bits
        return float(-np.expm1(np.log1p(-(fill**self.num_hashes)).sum()))  # exact for tiny rates too

    # -- keys -------------------------------------------------------------------------------

    def might_contain(self, keys: Keys) -> np.ndarray:
        """Per key (pyarrow string array or sequence of str): False if it was certainly never added,
        True if it may have been (Hudi's ``mightContain``, vectorized). Null keys raise ValueError;
        an empty key, which Hudi cannot hash, answers True."""
        binary = _as_binary(keys)
        n, rows = len(binary), self.num_rows
        units = _Units(
            list(self._rows),
            np.full(rows, self.num_bits, dtype=np.int64),
            np.full(rows, self.num_hashes, dtype=np.int64),
            sparse=False,
        )
        if rows == 1:
            return _probe_entries(units, binary)
        hit = _probe_entries(units, binary, np.repeat(np.arange(n), rows), np.tile(np.arange(rows), n))
        return np.asarray(hit.reshape(n, rows).any(axis=1))

    def add_all(self, keys: Keys) -> None:
        """Add ``keys`` in order, setting the bits Hudi's ``add`` would set key after key.

        A DYNAMIC_V0 filter puts each key in its active row; when that row holds ``row_capacity``
        keys it adds a row if ``rows * row_capacity < max_entries``, else (Hudi's bound reached) it
        puts the next key in row 0 and every later one in the rows in turn (0, 1, ..., 0, 1, ...),
        where the false-positive rate is no longer bounded. Null or empty keys raise ValueError
        (Java throws on them too) and nothing is added.
        """
        data, starts, lengths = _valid_buffers(keys, "add")
        if not lengths.size:
            return
        row_of_key = self._assign_rows(lengths.size)
        chain = _MurmurChain(data, starts, lengths)
        row_offset = row_of_key * (self._rows.shape[1] * 8)  # bit index of each key's row start
        bits = np.concatenate(
            [row_offset + _positions(chain.step(), self.num_bits) for _ in range(self.num_hashes)]
        )
        flat = self._rows.reshape(-1)
        if bits.size * 4 >= flat.size:  # many bits: one pass over a bool per bit beats ufunc.at
            dense = np.zeros(flat.size * 8, dtype=bool)
            dense[bits] = True
            flat |= np.packbits(dense, bitorder="little")  # LSB-first, as InternalBloomFilter.write
        else:
            masks = np.left_shift(np.uint8(1), (bits & 7).astype(np.uint8))  # BIT_VALUES[i % 8]
            np.bitwise_or.at(flat, bits >> 3, masks)

    def _assign_rows(self, n: int) -> np.ndarray:
        """Row of each of the next ``n`` keys, advancing the DYNAMIC_V0 state as Java's ``add``
        (``getActiveStandardBF``) does, one segment of keys at a time."""
        out = np.zeros(n, dtype=np.int64)
        if self._type_code == SIMPLE:
            return out
        nr = self.row_capacity
        i = 0
        while i < n:
            rows = self.num_rows
            if self._reached_max:  # matrix[curMatrixIndex++ % matrix.length]
                count = n - i
                out[i:] = (self._cursor + np.arange(count)) % rows
                self._cursor += count
                self._current = _java_int(self._current + count)
                break
            if self._current >= nr:
                if _java_int(rows * nr) < self._max_entries:
                    self._rows = np.concatenate([self._rows, np.zeros_like(self._rows[:1])])
                    self._current = 0
                    continue
                self._reached_max = True  # this key goes to row 0, the next ones cycle from row 0
                out[i] = 0
                self._current = _java_int(self._current + 1)
                i += 1
                continue
            count = min(n - i, nr - self._current)
            out[i : i + count] = rows - 1
            self._current += count
            i += count
        return out

    # -- serialization ----------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The binary serialized form Hudi writes (before base64)."""
        header = _HEADER.pack(_VERSION, self.num_hashes, self.hash_type, self.num_bits)
        if self._type_code == SIMPLE:
            return header + self._rows[0].tobytes()
        parts = [header, _DYNAMIC.pack(self.row_capacity, self._current, self.num_rows)]
        for row in self._rows:
            parts += [header, row.tobytes()]
        return b"".join(parts)

    def to_serialized(self) -> str:
        """The footer value Hudi writes (``serializeToString``): base64 of :meth:`to_bytes`."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HudiBloomFilter):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    def __repr__(self) -> str:
        return (
            f"HudiBloomFilter({self._type_code}, num_bits={self.num_bits}, num_hashes={self.num_hashes}, "
            f"rows={self.num_rows}, set_bits={self.bit_count()})"
        )


def _type_code(code: str | bytes | None) -> str:
    """Hudi's type code (matched ignoring case, as Java's ``equalsIgnoreCase``); None is SIMPLE."""
    if code is None:
        return SIMPLE
    text = code.decode("utf-8", "replace") if isinstance(code, bytes) else str(code)
    for known in TYPE_CODES:
        if text.upper() == known:
            return known
    raise ValueError(f"unknown Hudi bloom filter type code {text!r} (known: {', '.join(TYPE_CODES)})")


def _read_header(data: bytes, at: int) -> tuple[int, int, int]:
    """``(k, m, next offset)`` of the filter header at ``at``."""
    if len(data) < at + 4:
        raise HudiBloomFormatError(f"Hudi bloom filter truncated at {len(data)} bytes")
    (version,) = struct.unpack_from(">i", data, at)
    if version > 0:  # Hadoop's pre-versioned format: k first, Jenkins hash
        raise HudiBloomFormatError(
            "Hudi bloom filter in the old unversioned format (Jenkins hash): not supported"
        )
    if version != _VERSION:
        raise HudiBloomFormatError(f"unsupported Hudi bloom filter version {version}")
    if len(data) < at + _HEADER.size:
        raise HudiBloomFormatError(f"Hudi bloom filter truncated at {len(data)} bytes")
    _, num_hashes, hash_type, num_bits = _HEADER.unpack_from(data, at)
    if hash_type != MURMUR_HASH:
        raise HudiBloomFormatError(f"Hudi bloom filter hash type {hash_type} is not Murmur: not supported")
    if num_hashes < 1 or num_bits < 1:
        raise HudiBloomFormatError(f"corrupt Hudi bloom filter header: k={num_hashes}, m={num_bits}")
    return num_hashes, num_bits, at + _HEADER.size


def _read_bits(data: bytes, at: int, num_bits: int) -> tuple[np.ndarray, int]:
    """The ``ceil(m / 8)`` bit bytes at ``at``; bits past ``m`` cleared (Java reads only ``m``
    bits, and writes the rest of the last byte as zeros)."""
    size = (num_bits + 7) // 8
    if len(data) < at + size:
        raise HudiBloomFormatError(f"Hudi bloom filter of {num_bits} bits truncated at {len(data)} bytes")
    row = np.frombuffer(data, dtype=np.uint8, count=size, offset=at).copy()
    if num_bits % 8:
        row[-1] &= (1 << (num_bits % 8)) - 1
    return row, at + size


def _expect_end(data: bytes, at: int) -> None:
    if at != len(data):
        raise HudiBloomFormatError(f"Hudi bloom filter has {len(data) - at} unexpected trailing bytes")


def _footer(metadata: Any) -> dict[str, str]:
    """A footer's key-value metadata as str -> str (from ``FileMetaData`` or a bytes/str mapping)."""
    if metadata is None:
        return {}
    if hasattr(metadata, "metadata") and not isinstance(metadata, Mapping):
        metadata = metadata.metadata or {}
    out = {}
    for key, value in metadata.items():
        k = key.decode("utf-8", "replace") if isinstance(key, bytes) else str(key)
        out[k] = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
    return out
