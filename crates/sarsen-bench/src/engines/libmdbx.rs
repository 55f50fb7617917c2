//! libmdbx: not written yet.
