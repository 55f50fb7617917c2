//! sled: not written yet.
