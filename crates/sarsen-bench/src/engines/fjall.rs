//! fjall: not written yet.
