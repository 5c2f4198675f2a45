"""Hudi's own bloom filters: the filter each Hudi base file carries in its parquet footer, read,
probed and written bit-exact with Hudi's Java code (``org.apache.hudi.common.bloom``), so that
tagging can use the filters Hudi already wrote and an index built here can be read by Hudi.

Footer entries (parquet key-value metadata of a base file):

- ``org.apache.hudi.bloomfilter`` (older tables: ``com.uber.hoodie.bloomfilter``): the filter,
  base64 (``java.util.Base64``: standard alphabet, padded);
- ``hoodie_bloom_filter_type_code``: ``DYNAMIC_V0``; absent means ``SIMPLE``;
- ``hoodie_min_record_key`` / ``hoodie_max_record_key``: the file's smallest and largest key.

Serialized form (Java ``DataOutput``: every integer big-endian):

- filter header: int32 version (-1), int32 number of hashes ``k``, int8 hash type (1: Murmur),
  int32 number of bits ``m``;
- ``SIMPLE`` (Hadoop's ``org.apache.hadoop.util.bloom.BloomFilter``): the header, then
  ``ceil(m / 8)`` bytes, bit ``i`` in byte ``i // 8`` under the mask ``1 << (i % 8)``;
- ``DYNAMIC_V0`` (``HoodieDynamicBoundedBloomFilter``): the header, int32 ``nr`` (keys per row),
  int32 keys in the active row, int32 number of rows, then each row as a ``SIMPLE`` filter.
  A key may be in the filter when any row contains it.

Key positions: the ``k`` hashes of a key are chained, ``h1 = murmur(utf8(key), seed=0)``,
``h(i+1) = murmur(utf8(key), seed=h(i))``, and position ``i`` is ``|h(i) % m|`` with Java's
truncating ``%``. ``murmur`` is Hadoop's MurmurHash2 variant, in Java 32-bit int arithmetic.

Everything is vectorized with numpy over arrays of keys: the hash of every key advances one chain
step per pass, and keys are dropped as soon as one of their bits is clear.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.bloom import BloomFilterFormatError

__all__ = [
    "BLOOM_FOOTER_KEY",
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "DYNAMIC_V0",
    "MAX_KEY_FOOTER_KEY",
    "MIN_KEY_FOOTER_KEY",
    "OLD_BLOOM_FOOTER_KEY",
    "SIMPLE",
    "TYPE_CODE_FOOTER_KEY",
    "HudiBloomFilter",
    "HudiBloomFilterSet",
    "HudiBloomFormatError",
    "footer_key_bounds",
    "hudi_bloom_size",
    "hudi_footer",
    "java_argsort",
    "java_sort_keys",
    "murmur_chain",
]

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
TYPE_CODES = (SIMPLE, DYNAMIC_V0)

BLOOM_FOOTER_KEY = "org.apache.hudi.bloomfilter"
OLD_BLOOM_FOOTER_KEY = "com.uber.hoodie.bloomfilter"
TYPE_CODE_FOOTER_KEY = "hoodie_bloom_filter_type_code"
MIN_KEY_FOOTER_KEY = "hoodie_min_record_key"
MAX_KEY_FOOTER_KEY = "hoodie_max_record_key"

# Hudi's write defaults: hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp,
# hoodie.bloom.index.filter.dynamic.max.entries (hoodie.bloom.index.filter.type is DYNAMIC_V0).
DEFAULT_NUM_ENTRIES = 60_000
DEFAULT_FPP = 1e-9
DEFAULT_MAX_ENTRIES = 100_000

MURMUR_HASH = 1  # org.apache.hudi.common.util.hash.Hash.MURMUR_HASH (JENKINS_HASH is 0)
_VERSION = -1  # InternalFilter.VERSION: negative, so the pre-versioned format (k first) is told apart
_HEADER = struct.Struct(">iibi")  # version, nbHash, hashType (one byte), vectorSize
_DYNAMIC = struct.Struct(">iii")  # nr, currentNbRecord, number of rows

_M = np.uint32(0x5BD1E995)  # MurmurHash2's multiplier
_I32 = 1 << 32

Keys: TypeAlias = pa.Array | pa.ChunkedArray | Sequence[str] | np.ndarray


class HudiBloomFormatError(BloomFilterFormatError):
    """A Hudi bloom filter (footer value or serialized bytes) is truncated, corrupt or of a kind
    this module does not read (an unknown type code, a hash other than Murmur)."""


def _java_int(value: int) -> int:
    """``value`` wrapped to a Java 32-bit int (two's complement overflow)."""
    value &= _I32 - 1
    return value - _I32 if value >= 1 << 31 else value


def hudi_bloom_size(num_entries: int, fpp: float) -> tuple[int, int]:
    """``(m, k)`` as Hudi's ``BloomFilterUtils`` sizes a filter for ``num_entries`` keys at ``fpp``:
    ``m = (int) ceil(n * (-ln p / ln(2)^2))`` and ``k = (int) ceil(ln(2) * m / n)``, in doubles and in
    Java's order of operations (Hudi's defaults, 60,000 at 1e-9, give m = 2,587,966 and k = 30)."""
    if num_entries < 1:
        raise ValueError(f"num_entries must be >= 1, got {num_entries}")
    if not 0.0 < fpp < 1.0:
        raise ValueError(f"fpp must be in (0, 1), got {fpp}")
    log2_squared = math.log(2) * math.log(2)
    bits = math.ceil(num_entries * (-math.log(fpp) / log2_squared))
    hashes = math.ceil(math.log(2) * bits / num_entries)
    if bits >= 1 << 31:
        raise ValueError(f"{num_entries} entries at fpp {fpp} need {bits} bits, more than a Java int holds")
    return bits, hashes


# ---------------------------------------------------------------------------------------------
# Keys as UTF-8 bytes, and Hadoop's MurmurHash2 over many keys at once


def _as_binary(keys: Keys) -> pa.Array:
    """``keys`` as one large_binary array holding each key's UTF-8 bytes (binary keys: as they are)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], keys.type)
    elif not isinstance(keys, pa.Array):
        if isinstance(keys, str | bytes | bytearray | memoryview) or not isinstance(keys, Iterable):
            raise TypeError(f"expected an array or sequence of keys, got {keys!r}; wrap one key in a list")
        keys = pa.array(keys if isinstance(keys, np.ndarray | Sequence) else list(keys))
        if pa.types.is_null(keys.type):
            keys = keys.cast(pa.large_string())
    t = keys.type
    if pa.types.is_dictionary(t):
        keys, t = keys.dictionary_decode(), t.value_type
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return keys.cast(pa.large_binary())
    raise TypeError(f"record keys must be strings, got an array of {t}")


def _buffers(binary: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(data, starts, lengths)`` of a large_binary array, without copying the bytes."""
    n = len(binary)
    _, offsets_buf, data_buf = binary.buffers()
    if offsets_buf is None:  # an empty array may come without buffers
        return np.zeros(0, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64)
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[binary.offset : binary.offset + n + 1]
    data = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
    return data, offsets[:-1], np.diff(offsets)


class _MurmurChain:
    """The chained Hadoop MurmurHash2 values of many keys: ``step()`` advances every live key from
    ``h(i)`` to ``h(i+1) = murmur(key, seed=h(i))`` (``h(0)`` is the seed 0) and returns them.

    The seed-independent part of MurmurHash2 (each 4-byte block mixed on its own) is computed once;
    each step only folds the mixed blocks into the running hash: whole-array operations for the
    blocks every key has, and operations on the keys that have it for the others. All arithmetic
    is on uint32 arrays, whose wrap-around is Java's int overflow. Keys keep their order.
    """

    def __init__(self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        n = lengths.size
        blocks = lengths >> 2
        self.length = lengths.astype(np.uint32)
        # A block is the 4 bytes at its offset read little-endian (Java assembles it from data[i4+3]
        # down to data[i4]): an unaligned uint32 view of the key bytes reads it in one gather.
        stride = int(starts[1] - starts[0]) if n > 1 else 0
        uniform = n == 0 or bool(blocks.min() == blocks.max())
        packed = uniform and n > 1 and stride > 0 and bool((np.diff(starts) == stride).all())
        common = int(blocks.min()) if n else 0
        # mixed[b] = (keys having block b, or None for all keys; their mixed block b)
        self.mixed: list[tuple[np.ndarray | None, np.ndarray]] = []
        max_blocks = int(blocks.max()) if n else 0
        words = np.ndarray((max(data.size - 3, 0),), np.dtype("<u4"), data, 0, (1,)) if max_blocks else None
        for b in range(max_blocks):
            who = None if b < common else np.flatnonzero(blocks > b)
            if packed:  # equal-length keys back to back: block b is a strided view, no gather
                k = np.ndarray((n,), np.dtype("<u4"), data, int(starts[0]) + 4 * b, (stride,)).astype(
                    np.uint32
                )
            else:
                assert words is not None
                k = words[(starts if who is None else starts[who]) + 4 * b].astype(np.uint32)
            k *= _M
            k ^= k >> np.uint32(24)
            k *= _M
            self.mixed.append((who, k))
        # The 1 to 3 bytes after the last block, xor-ed in as *signed* bytes: Java's `(int) data[i]`
        # sign-extends a byte >= 0x80, so its high bits flip too (unlike the C MurmurHash2).
        left = lengths & 3
        tail = np.zeros(n, dtype=np.int32)
        if data.size:
            ends = starts + lengths
            for back, shift in ((3, 16), (2, 8), (1, 0)):
                signed = data[np.maximum(ends - back, 0)].view(np.int8).astype(np.int32) << np.int32(shift)
                tail ^= np.where(left >= back, signed, np.int32(0))
        self.tail = tail.view(np.uint32)
        self.has_tail = left != 0
        self.seed = np.zeros(n, dtype=np.uint32)

    @property
    def size(self) -> int:
        return int(self.seed.size)

    def step(self) -> np.ndarray:
        """The next hash of every live key (uint32 holding Java's int), which becomes its seed."""
        h = self.seed ^ self.length
        for who, k in self.mixed:
            if who is None:
                h *= _M
                h ^= k
            else:
                h[who] = (h[who] * _M) ^ k
        h ^= self.tail
        np.multiply(h, _M, out=h, where=self.has_tail)
        h ^= h >> np.uint32(13)
        h *= _M
        h ^= h >> np.uint32(15)
        self.seed = h
        return h

    def keep(self, live: np.ndarray) -> None:
        """Keep only the live keys at the ascending positions ``live``."""
        renumber = np.full(self.size, -1, dtype=np.int64)
        renumber[live] = np.arange(live.size)
        mixed: list[tuple[np.ndarray | None, np.ndarray]] = []
        for who, k in self.mixed:
            if who is None:
                mixed.append((None, k[live]))
                continue
            new = renumber[who]
            kept = np.flatnonzero(new >= 0)
            if kept.size:
                mixed.append((new[kept], k[kept]))
        self.mixed = mixed
        self.length = self.length[live]
        self.tail = self.tail[live]
        self.has_tail = self.has_tail[live]
        self.seed = self.seed[live]


def murmur_chain(keys: Keys, num_hashes: int) -> np.ndarray:
    """The ``num_hashes`` chained Hadoop MurmurHash2 values of each key's UTF-8 bytes, as Java ints
    (int32 array of shape ``(len(keys), num_hashes)``): column 0 is ``murmur(key, seed=0)``, column
    ``i`` is ``murmur(key, seed=column i-1)``. Null and empty keys raise ValueError (Hudi's hash
    function rejects them)."""
    data, starts, lengths = _valid_buffers(keys, "hash")
    chain = _MurmurChain(data, starts, lengths)
    out = np.empty((lengths.size, num_hashes), dtype=np.int32)
    for i in range(num_hashes):
        out[:, i] = chain.step().view(np.int32)
    return out


def _valid_buffers(keys: Keys, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    binary = _as_binary(keys)
    if binary.null_count:
        raise ValueError(f"cannot {what} {binary.null_count} null record key(s): Hudi keys are never null")
    data, starts, lengths = _buffers(binary)
    if (lengths == 0).any():
        # Java's HashFunction throws "key length must be > 0": Hudi never adds an empty key.
        raise ValueError(f"cannot {what} {int((lengths == 0).sum())} empty record key(s)")
    return data, starts, lengths


def _positions(h: np.ndarray, num_bits: np.ndarray | int) -> np.ndarray:
    """Bit positions of hashes ``h`` (uint32 holding Java ints) in filters of ``num_bits`` bits."""
    # Java's Math.abs(h % m): `%` truncates toward zero (np.fmod), so a negative h gives -(|h| mod m);
    # |h % m| < m < 2**31, so int32 arithmetic cannot overflow here.
    divisor = np.int32(num_bits) if isinstance(num_bits, int) else num_bits.astype(np.int32)
    return np.abs(np.fmod(h.view(np.int32), divisor)).astype(np.int64)


def _bits_at(buffer: np.ndarray, byte_start: np.ndarray | int, positions: np.ndarray) -> np.ndarray:
    """Whether bit ``positions`` is set in the bit arrays starting at byte ``byte_start``."""
    byte = buffer[byte_start + (positions >> 3)]
    # LSB-first: bit i is byte i // 8 under the mask 1 << (i % 8) (InternalBloomFilter.BIT_VALUES).
    return ((byte >> (positions & 7).astype(np.uint8)) & 1).astype(bool)


# ---------------------------------------------------------------------------------------------
# Probing many (key, bit array) entries at once


class _Units:
    """Bit arrays ("units": a SIMPLE filter, or one row of a DYNAMIC_V0 one) probed together.

    A unit is stored dense (its bytes in one shared buffer) or, when few of its bits are set,
    sparse: its set bit positions in one sorted int64 array of ``unit << 32 | position``, probed
    by binary search. Hudi's default filters are 316 KiB each whatever the file's key count, so a
    small file's filter shrinks from 316 KiB to 8 bytes per set bit.
    """

    def __init__(
        self, rows: Sequence[np.ndarray], num_bits: np.ndarray, num_hashes: np.ndarray, sparse: bool = True
    ) -> None:
        """``rows``: each unit's bit bytes; ``sparse=False`` keeps every unit dense."""
        self.num_bits = np.asarray(num_bits, dtype=np.int64)
        self.num_hashes = np.asarray(num_hashes, dtype=np.int64)
        n = len(rows)
        self.dense = np.zeros(n, dtype=bool)
        self.start = np.zeros(n, dtype=np.int64)
        dense_rows, sparse_bits = [], []
        offset = 0
        for u, row in enumerate(rows):
            nonzero = np.flatnonzero(row) if sparse else None
            # sparse (8 bytes per set bit, probed by binary search) when at most half the dense size
            if nonzero is None or int(np.bitwise_count(row[nonzero]).sum(dtype=np.int64)) * 16 > row.size:
                self.dense[u] = True
                self.start[u] = offset
                dense_rows.append(row)
                offset += row.size
            elif nonzero.size:
                bits = np.unpackbits(row[nonzero, None], axis=1, bitorder="little")
                byte_of, bit_of = np.nonzero(bits)
                sparse_bits.append((np.int64(u) << 32) | (nonzero[byte_of].astype(np.int64) * 8 + bit_of))
        self.buffer = np.concatenate(dense_rows) if dense_rows else np.zeros(0, np.uint8)
        self.sparse = np.concatenate(sparse_bits) if sparse_bits else np.zeros(0, np.int64)
        self.all_dense = bool(self.dense.all())

    def __len__(self) -> int:
        return int(self.num_bits.size)

    def test(self, unit: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Whether bit ``positions[j]`` is set in unit ``unit[j]``."""
        if self.all_dense:
            return _bits_at(self.buffer, self.start[unit], positions)
        out = np.zeros(unit.size, dtype=bool)
        dense = self.dense[unit]
        at = np.flatnonzero(dense)
        if at.size:
            out[at] = _bits_at(self.buffer, self.start[unit[at]], positions[at])
        at = np.flatnonzero(~dense)
        if at.size and self.sparse.size:
            wanted = (unit[at].astype(np.int64) << 32) | positions[at]
            order = np.argsort(wanted)  # sorted needles: binary searches walk memory in order (~15x)
            wanted = wanted[order]
            found = np.searchsorted(self.sparse, wanted)
            found[found == self.sparse.size] = 0
            out[at[order]] = self.sparse[found] == wanted
        return out

    def probe(self, chain: _MurmurChain, entry_key: np.ndarray, entry_unit: np.ndarray) -> np.ndarray:
        """Per entry ``(key, unit)``: may the unit contain the key (all its ``k`` bits set)?
        ``entry_key`` indexes the chain's live keys; the chain is advanced (and shrunk) here."""
        alive = np.arange(entry_key.size)
        key, unit = entry_key, entry_unit
        m, k = self.num_bits, self.num_hashes
        uniform_m = int(m[0]) if len(self) and bool((m == m[0]).all()) else None
        uniform_k = int(k[0]) if len(self) and bool((k == k[0]).all()) else None
        max_k = uniform_k if uniform_k is not None else int(k[unit].max()) if unit.size else 0
        unpacked = None
        if len(self) == 1 and self.all_dense and entry_key.size * 64 >= self.num_bits[0]:
            # Many keys against one filter: one bool per bit makes each probe a single gather.
            unpacked = np.unpackbits(self.buffer, bitorder="little").view(bool)
        identity = key.size == chain.size and _is_identity(key)
        for step in range(max_k):
            h = chain.step()
            if not identity:
                h = h[key]
            positions = _positions(h, uniform_m if uniform_m is not None else m[unit])
            ok = unpacked[positions] if unpacked is not None else self.test(unit, positions)
            if uniform_k is None:
                ok |= step >= k[unit]  # a filter with fewer hashes than others is done
            if ok.all():
                continue
            kept = np.flatnonzero(ok)  # (indexing with a random boolean mask is ~10x slower)
            alive, key, unit = alive[kept], key[kept], unit[kept]
            identity = False
            if not alive.size or step + 1 >= (uniform_k if uniform_k is not None else int(k[unit].max())):
                break
            used = np.zeros(chain.size, dtype=bool)
            used[key] = True
            live = np.flatnonzero(used)
            if live.size * 2 <= chain.size:  # hash only the keys some entry still needs
                renumber = np.cumsum(used) - 1
                chain.keep(live)
                key = renumber[key]
                identity = key.size == chain.size and _is_identity(key)
        out = np.zeros(entry_key.size, dtype=bool)
        out[alive] = True
        return out


def _is_identity(index: np.ndarray) -> bool:
    return bool(index.size == 0 or (index[0] == 0 and (np.diff(index) == 1).all()))


def _probe_entries(
    units: _Units, binary: pa.Array, entry_key: np.ndarray | None = None, entry_unit: np.ndarray | None = None
) -> np.ndarray:
    """Per entry ``(key, unit)`` (``entry_key`` indexes ``binary``): may the unit contain the key?
    Each key is hashed once, however many entries name it. Without entries: each key against unit 0."""
    if binary.null_count:
        raise ValueError(f"cannot probe {binary.null_count} null record key(s): Hudi keys are never null")
    data, starts, lengths = _buffers(binary)
    if entry_key is None or entry_unit is None:
        empty = lengths == 0
        if not empty.any():  # the common case: every key once, in order
            chain = _MurmurChain(data, starts, lengths)
            return units.probe(chain, np.arange(lengths.size), np.zeros(lengths.size, dtype=np.int64))
        entry_key, entry_unit = np.arange(lengths.size), np.zeros(lengths.size, dtype=np.int64)
    result = np.zeros(entry_key.size, dtype=bool)
    # An empty key cannot be hashed (Java throws): answer "maybe", the caller's verification decides.
    empty = lengths[entry_key] == 0
    result[empty] = True
    todo = np.flatnonzero(~empty) if empty.any() else np.arange(entry_key.size)
    if not todo.size:
        return result
    used = np.zeros(lengths.size, dtype=bool)
    used[entry_key[todo]] = True
    wanted = np.flatnonzero(used)
    if wanted.size == lengths.size:
        chain, chain_key = _MurmurChain(data, starts, lengths), entry_key[todo]
    else:
        chain = _MurmurChain(data, starts[wanted], lengths[wanted])
        chain_key = (np.cumsum(used) - 1)[entry_key[todo]]
    hit = units.probe(chain, chain_key, entry_unit[todo])
    result[todo[hit]] = True
    return result


# ---------------------------------------------------------------------------------------------
# One filter


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


# ---------------------------------------------------------------------------------------------
# Footers


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


def footer_key_bounds(metadata: Any) -> tuple[str, str] | None:
    """``(hoodie_min_record_key, hoodie_max_record_key)`` of a base file's footer, or None unless
    both are there (no keys in the file, or a table without meta fields).

    The bounds are in the order of the writer that made the file: Hudi's Avro writer compares
    ``String``s (UTF-16 code units, :func:`java_sort_keys`), its Spark row writer compares
    ``UTF8String``s (UTF-8 bytes). The two differ only for keys with characters above U+FFFF, so a
    range test that must not miss a key admits it when either order puts it inside the bounds.
    """
    footer = _footer(metadata)
    low, high = footer.get(MIN_KEY_FOOTER_KEY), footer.get(MAX_KEY_FOOTER_KEY)
    if low is None or high is None:
        return None
    return low, high


def hudi_footer(
    keys: Keys,
    type_code: str = DYNAMIC_V0,
    num_entries: int = DEFAULT_NUM_ENTRIES,
    fpp: float = DEFAULT_FPP,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> dict[str, str]:
    """The footer entries Hudi's writer would put on a base file holding ``keys`` (in row order):
    the filter, its type code (written for DYNAMIC_V0 only, as Hudi does) and, when there are keys,
    the min/max key in Java ``String`` order. With Hudi's defaults unless told otherwise."""
    bloom = HudiBloomFilter.create(num_entries, fpp, type_code, max_entries)
    bloom.add_all(keys)
    out = {BLOOM_FOOTER_KEY: bloom.to_serialized()}
    if bloom.type_code == DYNAMIC_V0:
        out[TYPE_CODE_FOOTER_KEY] = DYNAMIC_V0
    binary = _as_binary(keys)
    if len(binary):
        order = java_argsort(binary)
        out[MIN_KEY_FOOTER_KEY] = binary[int(order[0])].as_py().decode("utf-8")
        out[MAX_KEY_FOOTER_KEY] = binary[int(order[-1])].as_py().decode("utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# Java String order

# Valid UTF-8 has the bytes 0xEE-0xF4 only as lead bytes: 0xEE/0xEF start U+E000-U+FFFF, 0xF0-0xF4
# start U+10000 and up, which Java holds as surrogate pairs (0xD800-0xDFFF) and so sorts *below*
# U+E000-U+FFFF. Moving 0xF0-0xF4 down to 0xEE-0xF2 and 0xEE/0xEF up to 0xF3/0xF4 (each group
# keeping its order; continuation bytes are 0x80-0xBF, untouched) makes byte order UTF-16 order.
_UTF16_ORDER = np.arange(256, dtype=np.uint8)
_UTF16_ORDER[0xF0:0xF5] = np.arange(0xEE, 0xF3, dtype=np.uint8)
_UTF16_ORDER[0xEE:0xF0] = np.array([0xF3, 0xF4], dtype=np.uint8)


def java_sort_keys(strings: Keys) -> pa.LargeBinaryArray:
    """Binary sort keys whose bytewise order is Java's ``String.compareTo`` order of ``strings``
    (UTF-16 code units; Python's ``str`` order and UTF-8 byte order are by code point, which
    differs only when a character above U+FFFF meets one in U+E000-U+FFFF). One table lookup per
    byte, vectorized; nulls stay null."""
    binary = _as_binary(strings)
    validity, offsets, data = binary.buffers()
    if data is None or not len(binary):
        return binary
    mapped = pa.py_buffer(_UTF16_ORDER[np.frombuffer(data, dtype=np.uint8)].tobytes())
    return pa.Array.from_buffers(
        pa.large_binary(), len(binary), [validity, offsets, mapped], binary.null_count, binary.offset
    )


def java_argsort(strings: Keys) -> np.ndarray:
    """Indices that sort ``strings`` as Java's ``String.compareTo`` (stable; nulls last)."""
    return pc.sort_indices(java_sort_keys(strings)).to_numpy()


# ---------------------------------------------------------------------------------------------
# Many files' filters


class HudiBloomFilterSet:
    """Optional Hudi bloom filters of N base files, probed together: every key is hashed once
    (the chained hashes do not depend on a filter's size) and tested against all the filters it
    is paired with in one vectorized pass. A file without a filter may hold any key: True.

    Sparse storage keeps memory to the set bits for lightly filled filters (see ``_Units``).
    """

    __slots__ = ("_has_filter", "_unit_counts", "_unit_start", "_units")

    def __init__(self, filters: Sequence[HudiBloomFilter | None]) -> None:
        rows: list[np.ndarray] = []
        num_bits: list[int] = []
        num_hashes: list[int] = []
        n = len(filters)
        self._has_filter = np.zeros(n, dtype=bool)
        self._unit_start = np.zeros(n, dtype=np.int64)
        self._unit_counts = np.zeros(n, dtype=np.int64)
        for i, f in enumerate(filters):
            if f is None:
                continue
            self._has_filter[i] = True
            self._unit_start[i] = len(rows)
            self._unit_counts[i] = f.num_rows
            rows.extend(f._rows)
            num_bits += [f.num_bits] * f.num_rows
            num_hashes += [f.num_hashes] * f.num_rows
        self._units = _Units(rows, np.array(num_bits, np.int64), np.array(num_hashes, np.int64))

    @classmethod
    def from_footers(cls, footers: Iterable[Any]) -> HudiBloomFilterSet:
        """One entry per base file footer (see :meth:`HudiBloomFilter.from_footer`)."""
        return cls([HudiBloomFilter.from_footer(f) for f in footers])

    def __len__(self) -> int:
        return int(self._has_filter.size)

    @property
    def has_filter(self) -> np.ndarray:
        """Per file: whether it has a filter."""
        return self._has_filter.copy()

    def might_contain_pairs(self, keys: Keys, key_idx: np.ndarray, file_idx: np.ndarray) -> np.ndarray:
        """Per pair ``j``: may file ``file_idx[j]`` hold key ``keys[key_idx[j]]``? Each distinct key
        is hashed once however many files it is paired with (RFC-37's bloom probing stage). Null
        keys raise ValueError; an empty key (Hudi cannot hash one) answers True."""
        key_idx = np.asarray(key_idx, dtype=np.int64)
        file_idx = np.asarray(file_idx, dtype=np.int64)
        if key_idx.shape != file_idx.shape:
            raise ValueError(f"key_idx and file_idx differ in length: {key_idx.size} and {file_idx.size}")
        counts = self._unit_counts[file_idx]
        entry_pair = np.repeat(np.arange(file_idx.size), counts)
        # the units of pair j are unit_start[file] .. unit_start[file] + counts[j] - 1
        first_entry = np.cumsum(counts) - counts
        entry_unit = np.repeat(self._unit_start[file_idx] - first_entry, counts) + np.arange(entry_pair.size)
        hit = _probe_entries(self._units, _as_binary(keys), key_idx[entry_pair], entry_unit)
        result = ~self._has_filter[file_idx]
        result[entry_pair[hit]] = True
        return result

    def might_contain(self, key: str) -> np.ndarray:
        """Per file: may it hold ``key``? (True for files without a filter.)"""
        n = len(self)
        return self.might_contain_pairs([key], np.zeros(n, dtype=np.int64), np.arange(n))

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        """``Membership``: per file, False where no filter admits any of ``values`` (null values
        never match); True where one may be there, or the file has no filter. With no non-null
        values, False everywhere."""
        binary = _as_binary(values)
        if binary.null_count:
            binary = binary.filter(binary.is_valid())
        n, v = len(self), len(binary)
        out = np.zeros(n, dtype=bool)
        if v == 0:
            return pa.array(out)
        out |= ~self._has_filter
        files = np.flatnonzero(self._has_filter)
        chunk = max(1, (1 << 22) // max(1, files.size))
        for lo in range(0, v, chunk):
            count = min(chunk, v - lo)
            key_idx = np.repeat(np.arange(lo, lo + count), files.size)
            file_idx = np.tile(files, count)
            hit = self.might_contain_pairs(binary, key_idx, file_idx)
            out[file_idx[hit]] = True
        return pa.array(out)

    def __repr__(self) -> str:
        return f"HudiBloomFilterSet(files={len(self)}, with_filter={int(self._has_filter.sum())})"
