//! The snapshot file: what a snapshot builder writes from one read
//! transaction, what openraft streams to a follower in chunks, and what the
//! follower reads back to install.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! "SRSNAP01"                      8 bytes, the magic
//! meta length (u32), meta         openraft's SnapshotMeta, bincode
//! records: 0x01, key length (u32), key, value length (u32), value
//!          ... in key order
//! 0x00, record count (u64)
//! checksum (u64)                  XXH3-64 of every byte before it
//! ```

use std::hash::Hasher;
use std::io::{self, Read, Write};

use openraft::SnapshotMeta;
use twox_hash::XxHash3_64;

use crate::error::{decode, encode, Result};
use crate::{Node, NodeId, StoreError};

const MAGIC: &[u8; 8] = b"SRSNAP01";
const RECORD: u8 = 1;
const END: u8 = 0;
/// Longest meta accepted on reading, bytes (membership of a few thousand
/// nodes fits easily).
const MAX_META: u32 = 16 << 20;

/// A writer that hashes everything written through it.
pub(crate) struct SnapshotWriter<W: Write> {
    out: W,
    hash: XxHash3_64,
    count: u64,
}

impl<W: Write> SnapshotWriter<W> {
    /// Starts a snapshot file on `out` with its header.
    pub(crate) fn new(out: W, meta: &SnapshotMeta<NodeId, Node>) -> Result<SnapshotWriter<W>> {
        let meta = encode("snapshot meta", meta)?;
        let len = u32::try_from(meta.len())
            .map_err(|_| StoreError::BadSnapshot("meta too large".into()))?;
        let mut w = SnapshotWriter {
            out,
            hash: XxHash3_64::with_seed(0),
            count: 0,
        };
        w.put(MAGIC)?;
        w.put(&len.to_le_bytes())?;
        w.put(&meta)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hash.write(bytes);
        self.out.write_all(bytes)
    }

    /// Appends one key-value record.
    pub(crate) fn record(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let too_big = || StoreError::BadSnapshot("record over 4 GiB".into());
        let klen = u32::try_from(key.len()).map_err(|_| too_big())?;
        let vlen = u32::try_from(value.len()).map_err(|_| too_big())?;
        self.put(&[RECORD])?;
        self.put(&klen.to_le_bytes())?;
        self.put(key)?;
        self.put(&vlen.to_le_bytes())?;
        self.put(value)?;
        self.count += 1;
        Ok(())
    }

    /// Writes the end marker, count and checksum; returns the output.
    pub(crate) fn finish(mut self) -> Result<W> {
        self.put(&[END])?;
        let count = self.count;
        self.put(&count.to_le_bytes())?;
        let sum = self.hash.finish();
        self.out.write_all(&sum.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A reader of a snapshot file that checks its structure and checksum,
/// optionally copying every byte it reads to `copy`.
pub(crate) struct SnapshotReader<R: Read, C: Write> {
    input: R,
    copy: C,
    hash: XxHash3_64,
    count: u64,
    max_key: usize,
    max_value: usize,
    done: bool,
}

impl<R: Read, C: Write> SnapshotReader<R, C> {
    /// Reads the header of the snapshot on `input`; records then come from
    /// [`next_record`](Self::next_record). Keys over `max_key` bytes and
    /// values over `max_value` are refused as damage.
    pub(crate) fn new(
        input: R,
        copy: C,
        max_key: usize,
        max_value: usize,
    ) -> Result<(SnapshotReader<R, C>, SnapshotMeta<NodeId, Node>)> {
        let mut r = SnapshotReader {
            input,
            copy,
            hash: XxHash3_64::with_seed(0),
            count: 0,
            max_key,
            max_value,
            done: false,
        };
        let mut magic = [0u8; 8];
        r.take(&mut magic)?;
        if &magic != MAGIC {
            return Err(StoreError::BadSnapshot(
                "not a Sarsen snapshot (magic)".into(),
            ));
        }
        let len = r.u32()?;
        if len > MAX_META {
            return Err(StoreError::BadSnapshot(format!("meta of {len} bytes")));
        }
        let mut meta = vec![0u8; len as usize];
        r.take(&mut meta)?;
        let meta = decode("snapshot meta", &meta)?;
        Ok((r, meta))
    }

    fn take(&mut self, buf: &mut [u8]) -> Result<()> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => StoreError::BadSnapshot("truncated".into()),
            _ => StoreError::Io(e),
        })?;
        self.hash.write(buf);
        self.copy.write_all(buf)?;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn field(&mut self, max: usize, what: &str, buf: &mut Vec<u8>) -> Result<()> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(StoreError::BadSnapshot(format!(
                "{what} of {len} bytes, over the limit of {max}"
            )));
        }
        buf.resize(len, 0);
        self.take(buf)
    }

    /// Reads the next record into `key` and `value`; `Ok(false)` after the
    /// last one, once the count, checksum and end of file are verified.
    pub(crate) fn next_record(&mut self, key: &mut Vec<u8>, value: &mut Vec<u8>) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let mut tag = [0u8; 1];
        self.take(&mut tag)?;
        match tag[0] {
            RECORD => {
                self.field(self.max_key, "key", key)?;
                self.field(self.max_value, "value", value)?;
                self.count += 1;
                Ok(true)
            }
            END => {
                let mut count = [0u8; 8];
                self.take(&mut count)?;
                if u64::from_le_bytes(count) != self.count {
                    return Err(StoreError::BadSnapshot(
                        "record count does not match".into(),
                    ));
                }
                let want = self.hash.finish();
                let mut sum = [0u8; 8];
                self.input
                    .read_exact(&mut sum)
                    .map_err(|_| StoreError::BadSnapshot("truncated".into()))?;
                self.copy.write_all(&sum)?;
                if u64::from_le_bytes(sum) != want {
                    return Err(StoreError::BadSnapshot("checksum mismatch".into()));
                }
                let mut extra = [0u8; 1];
                if self.input.read(&mut extra)? != 0 {
                    return Err(StoreError::BadSnapshot("bytes after the end".into()));
                }
                self.done = true;
                Ok(false)
            }
            t => Err(StoreError::BadSnapshot(format!("unknown record tag {t}"))),
        }
    }

    /// The copy sink, after the last record.
    pub(crate) fn into_copy(self) -> C {
        self.copy
    }
}

/// Reads only the meta of a snapshot file.
pub(crate) fn read_meta(input: impl Read) -> Result<SnapshotMeta<NodeId, Node>> {
    let (_, meta) = SnapshotReader::new(input, io::sink(), 0, 0)?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> SnapshotMeta<NodeId, Node> {
        SnapshotMeta {
            last_log_id: None,
            last_membership: Default::default(),
            snapshot_id: "s1".into(),
        }
    }

    fn file(records: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut w = SnapshotWriter::new(Vec::new(), &meta()).unwrap();
        for (k, v) in records {
            w.record(k, v).unwrap();
        }
        w.finish().unwrap()
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let (mut r, m) = SnapshotReader::new(bytes, Vec::new(), 100, 100)?;
        let mut out = Vec::new();
        let (mut k, mut v) = (Vec::new(), Vec::new());
        while r.next_record(&mut k, &mut v)? {
            out.push((k.clone(), v.clone()));
        }
        assert_eq!(r.into_copy(), bytes, "the copy is the file");
        // A changed meta that still decodes is caught by the checksum above.
        assert_eq!(m, meta());
        Ok(out)
    }

    #[test]
    fn round_trip() {
        let recs: [(&[u8], &[u8]); 3] = [(b"a", b""), (b"b", b"two"), (b"c", &[0u8; 100])];
        let got = read_all(&file(&recs)).unwrap();
        let want: Vec<_> = recs.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(got, want);
        assert_eq!(read_all(&file(&[])).unwrap(), vec![]);
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_refused() {
        let good = file(&[(b"key", b"value"), (b"k2", b"v2")]);
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(read_all(&bad).is_err(), "flip at {i} accepted");
            assert!(read_all(&good[..i]).is_err(), "truncation at {i} accepted");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(read_all(&longer).is_err());
    }

    #[test]
    fn lengths_over_the_limits_are_refused_before_allocating() {
        let bad = file(&[(&[7u8; 101], b"v")]);
        let err = read_all(&bad).unwrap_err();
        assert!(
            matches!(err, StoreError::BadSnapshot(ref s) if s.contains("key of 101")),
            "{err}"
        );
    }
}
