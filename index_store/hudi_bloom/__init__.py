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

from index_store.hudi_bloom.filter import HudiBloomFilter
from index_store.hudi_bloom.filter_set import HudiBloomFilterSet
from index_store.hudi_bloom.footer import footer_key_bounds, hudi_footer
from index_store.hudi_bloom.format import (
    BLOOM_FOOTER_KEY,
    DEFAULT_FPP,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    DYNAMIC_V0,
    MAX_KEY_FOOTER_KEY,
    MIN_KEY_FOOTER_KEY,
    OLD_BLOOM_FOOTER_KEY,
    SIMPLE,
    TYPE_CODE_FOOTER_KEY,
    HudiBloomFormatError,
    hudi_bloom_size,
)
from index_store.hudi_bloom.hashing import murmur_chain
from index_store.hudi_bloom.java_order import java_argsort, java_sort_keys

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
