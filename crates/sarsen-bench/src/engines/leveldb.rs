//! leveldb: not written yet.
