//! redb: not written yet.
