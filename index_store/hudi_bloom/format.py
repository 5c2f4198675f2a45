"""Hudi's bloom filter format: footer keys, type codes, defaults, the serialized layout, its
error, and how Hudi sizes a filter (in Java arithmetic)."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from hudi_expr.bloom import BloomFilterFormatError

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
