"""Tagging record keys with the data files holding them (Hudi RFC-37), for upserts."""

from index_store.tagging.stats import TagStats, tag_stats

__all__ = ["TagStats", "tag_stats"]
