//! rocksdb: not written yet.
