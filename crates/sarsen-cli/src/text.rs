//! The text format of LMDB's `mdb_dump` and `mdb_load` (`VERSION=3`, after
//! Berkeley DB's `db_dump`), shared by `sarsen dump` and `sarsen load`.
//!
//! A dump is a sequence of sections, one per database:
//!
//! ```text
//! VERSION=3
//! format=bytevalue          (or format=print)
//! database=NAME             (named databases only)
//! type=btree
//! mapsize=1099511627776
//! maxreaders=126
//! duplicates=1              (database flags, only those set: see DbFlags)
//! dupsort=1
//! db_pagesize=4096
//! HEADER=END
//!  6b6579                   (a key: a leading space, then the bytes)
//!  76616c7565               (its value)
//! DATA=END
//! ```
//!
//! In `bytevalue` format every byte is two lowercase hex digits; in `print`
//! format printable ASCII (0x20..=0x7e) stands as is, a backslash is `\\`
//! and every other byte is `\` and two hex digits. The `-T` plain text of
//! `mdb_load` has no header and no leading space: key and value lines
//! alternate, escaped as in `print` format.

use std::fmt;
use std::io::{self, BufRead, Write};

/// The newest format version this module reads, and the one it writes.
pub const VERSION: u32 = 3;

/// How keys and values are written on data lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Two lowercase hex digits a byte (`format=bytevalue`).
    Bytevalue,
    /// Printable ASCII as is, other bytes escaped (`format=print`).
    Print,
}

impl Format {
    /// The value of the `format=` header line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Bytevalue => "bytevalue",
            Format::Print => "print",
        }
    }
}

/// Lowercase hex digits, as `mdb_dump` writes them.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` to `out` as lowercase hex pairs.
pub fn encode_hex(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
}

/// Appends `bytes` to `out` escaped as in `print` format: printable ASCII
/// as is, `\` as `\\`, any other byte as `\` and two hex digits.
pub fn encode_print(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => {
                out.push(b'\\');
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
        }
    }
}

/// The value of hex digit `c`, either case.
fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes a line of hex pairs into `out` (cleared first).
///
/// Errors: an odd number of digits, or a character that is not a hex digit.
pub fn decode_hex(text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    if text.len() & 1 == 1 {
        return Err(format!(
            "odd number of hex digits ({}) in a bytevalue line",
            text.len()
        ));
    }
    for (i, pair) in text.chunks_exact(2).enumerate() {
        match (hex_digit(pair[0]), hex_digit(pair[1])) {
            (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
            _ => {
                return Err(format!(
                    "not a hex pair at column {}: {:?}",
                    2 + 2 * i,
                    String::from_utf8_lossy(pair)
                ))
            }
        }
    }
    Ok(())
}

/// Decodes a `print`-escaped line into `out` (cleared first): `\\` is a
/// backslash, `\` and two hex digits a byte, anything else itself.
///
/// Errors: a backslash followed by neither a backslash nor two hex digits.
pub fn decode_print(text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        if text.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
            continue;
        }
        match (
            text.get(i + 1).copied().and_then(hex_digit),
            text.get(i + 2).copied().and_then(hex_digit),
        ) {
            (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
            _ => {
                return Err(format!(
                    "bad escape at column {}: a backslash must be followed by \
                     another backslash or two hex digits",
                    i + 1
                ))
            }
        }
        i += 3;
    }
    Ok(())
}

/// The database flags of a section header: LMDB's flags of
/// `mdb_dbi_open` that change how a database sorts and holds its data,
/// each a `NAME=1` line when set. `mdb_dump` writes them, after
/// `maxreaders`, in the order of [`DbFlags::named`], preceded by
/// `duplicates=1` (Berkeley DB's keyword for duplicates) when `dupsort` is
/// set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbFlags {
    /// `reversekey`: keys compared from their last byte (`MDB_REVERSEKEY`,
    /// [`KeyOrder::ReverseBytewise`](sarsen::KeyOrder::ReverseBytewise)).
    pub reversekey: bool,
    /// `dupsort`: each key holds a sorted set of values (`MDB_DUPSORT`,
    /// [`DbOptions::dup_sort`](sarsen::DbOptions::dup_sort)).
    pub dupsort: bool,
    /// `integerkey`: keys are native-endian `unsigned int` or `size_t`
    /// (`MDB_INTEGERKEY`, [`KeyOrder::U32`](sarsen::KeyOrder::U32) or
    /// [`KeyOrder::U64`](sarsen::KeyOrder::U64)).
    pub integerkey: bool,
    /// `dupfixed`: the values of a key all have one size (`MDB_DUPFIXED`,
    /// [`DbOptions::dup_fixed`](sarsen::DbOptions::dup_fixed)).
    pub dupfixed: bool,
    /// `integerdup`: values are native-endian integers (`MDB_INTEGERDUP`).
    pub integerdup: bool,
    /// `reversedup`: values compared from their last byte (`MDB_REVERSEDUP`).
    pub reversedup: bool,
}

impl DbFlags {
    /// Each flag's keyword and setting, in the order `mdb_dump` writes
    /// them (its `dbflags` table).
    pub fn named(&self) -> [(&'static str, bool); 6] {
        [
            ("reversekey", self.reversekey),
            ("dupsort", self.dupsort),
            ("integerkey", self.integerkey),
            ("dupfixed", self.dupfixed),
            ("integerdup", self.integerdup),
            ("reversedup", self.reversedup),
        ]
    }

    /// The flag of keyword `name`, `None` for a keyword that is no flag.
    fn flag_mut(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "reversekey" => &mut self.reversekey,
            "dupsort" => &mut self.dupsort,
            "integerkey" => &mut self.integerkey,
            "dupfixed" => &mut self.dupfixed,
            "integerdup" => &mut self.integerdup,
            "reversedup" => &mut self.reversedup,
            _ => return None,
        })
    }

    /// The header lines of the flags set, in `mdb_dump`'s order.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.dupsort {
            out.push("duplicates=1".to_owned());
        }
        for (name, set) in self.named() {
            if set {
                out.push(format!("{name}=1"));
            }
        }
        out
    }

    /// Why these flags together cannot be honoured, if they cannot:
    /// duplicate flags without `dupsort`, or two orders for one thing.
    fn conflict(&self) -> Option<String> {
        if !self.dupsort {
            let stray = [
                ("dupfixed", self.dupfixed),
                ("integerdup", self.integerdup),
                ("reversedup", self.reversedup),
            ];
            if let Some((n, _)) = stray.into_iter().find(|f| f.1) {
                return Some(format!(
                    "{n}=1 without dupsort=1: it applies only to databases with \
                     sorted duplicates (LMDB's MDB_DUPSORT)"
                ));
            }
        }
        if self.integerkey && self.reversekey {
            return Some(
                "integerkey=1 and reversekey=1 together: a database has one key order".to_owned(),
            );
        }
        if self.integerdup && self.reversedup {
            return Some(
                "integerdup=1 and reversedup=1 together: a database has one order of values"
                    .to_owned(),
            );
        }
        None
    }
}

/// What a section's header says about the database `sarsen dump` writes.
#[derive(Debug)]
pub struct DumpHeader<'a> {
    /// How the data lines are encoded.
    pub format: Format,
    /// The named database, `None` for the main one.
    pub database: Option<&'a str>,
    /// `mapsize=`: the geometry's upper bound, bytes (what LMDB's map size is).
    pub mapsize: u64,
    /// `maxreaders=`: reader slots of the environment.
    pub maxreaders: u32,
    /// `db_pagesize=`: the page size, bytes.
    pub page_size: u32,
    /// The database flags.
    pub flags: DbFlags,
}

/// Writes a section header, `VERSION=3` through `HEADER=END`, in the order
/// `mdb_dump` writes it.
pub fn write_header(out: &mut impl Write, h: &DumpHeader<'_>) -> io::Result<()> {
    writeln!(out, "VERSION={VERSION}")?;
    writeln!(out, "format={}", h.format.name())?;
    if let Some(name) = h.database {
        writeln!(out, "database={name}")?;
    }
    writeln!(out, "type=btree")?;
    writeln!(out, "mapsize={}", h.mapsize)?;
    writeln!(out, "maxreaders={}", h.maxreaders)?;
    for line in h.flags.lines() {
        writeln!(out, "{line}")?;
    }
    writeln!(out, "db_pagesize={}", h.page_size)?;
    writeln!(out, "HEADER=END")
}

/// Writes one data line: a space, `bytes` encoded in `format`, a newline.
/// `buf` is scratch space, reused from call to call.
pub fn write_item(
    out: &mut impl Write,
    format: Format,
    bytes: &[u8],
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    buf.clear();
    buf.push(b' ');
    match format {
        Format::Bytevalue => encode_hex(bytes, buf),
        Format::Print => encode_print(bytes, buf),
    }
    buf.push(b'\n');
    out.write_all(buf)
}

/// A key shown in a message: `print`-escaped, cut after 64 bytes.
pub fn show_key(key: &[u8]) -> String {
    let mut buf = Vec::new();
    encode_print(&key[..key.len().min(64)], &mut buf);
    let mut s = String::from_utf8_lossy(&buf).into_owned();
    if key.len() > 64 {
        s.push_str(&format!("... ({} bytes)", key.len()));
    }
    format!("\"{s}\"")
}

/// An error in the input, with the line it is on (counted from 1).
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The line number.
    pub line: u64,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}

/// A section header as `sarsen load` reads it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// `format=`: how the data lines are encoded (default `bytevalue`).
    pub format: Option<Format>,
    /// `database=` and the line it is on; `None` for the main database.
    pub database: Option<(String, u64)>,
    /// `db_pagesize=` when it is a page size Sarsen can use.
    pub page_size: Option<u32>,
    /// The database flags (`NAME=1` lines; `NAME=0` leaves one unset).
    pub flags: DbFlags,
    /// `duplicates=1`, which must come with `dupsort=1`.
    pub duplicates: bool,
    /// Keywords not known to `mdb_load`, ignored: (line, keyword).
    pub ignored: Vec<(u64, String)>,
}

impl Header {
    /// The data format, `bytevalue` when the header does not say.
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Bytevalue)
    }
}

/// Reads the text format line by line, counting lines.
pub struct Reader<R> {
    input: R,
    /// Lines read so far: the number of the current line.
    line: u64,
    /// The current line without its newline.
    buf: Vec<u8>,
}

impl<R: BufRead> Reader<R> {
    /// A reader at the start of `input`.
    pub fn new(input: R) -> Reader<R> {
        Reader {
            input,
            line: 0,
            buf: Vec::new(),
        }
    }

    fn err(&self, msg: impl Into<String>) -> ParseError {
        ParseError {
            line: self.line,
            msg: msg.into(),
        }
    }

    /// Reads the next line into `buf`, without its newline; `false` at the
    /// end of the input. The last line may lack its newline.
    fn next_line(&mut self) -> Result<bool, ParseError> {
        self.buf.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError {
                line: self.line + 1,
                msg: format!("reading input: {e}"),
            })?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        Ok(true)
    }

    /// Reads a section header through `HEADER=END`; `None` at the end of
    /// the input before a new section starts (blank lines are skipped
    /// there).
    ///
    /// Errors: a line that is not `KEYWORD=VALUE`, a `VERSION` above 3, a
    /// format other than `bytevalue` or `print`, a type other than `btree`,
    /// a database name that is not UTF-8, a database flag with a value
    /// other than 0 or 1, flags that cannot go together (see
    /// [`DbFlags`]; `duplicates=1` without `dupsort=1`, Berkeley DB's
    /// unsorted duplicates), or the end of the input inside the header.
    pub fn header(&mut self) -> Result<Option<Header>, ParseError> {
        let mut h = Header::default();
        let mut started = false;
        loop {
            if !self.next_line()? {
                if started {
                    return Err(self.err("input ended inside a header (no HEADER=END)"));
                }
                return Ok(None);
            }
            if !started && self.buf.is_empty() {
                continue;
            }
            started = true;
            let line = String::from_utf8_lossy(&self.buf).into_owned();
            let Some((key, value)) = line.split_once('=') else {
                return Err(self.err(format!(
                    "expected KEYWORD=VALUE in a header, found {line:?}"
                )));
            };
            if self.header_line(&mut h, key, value)? {
                return Ok(Some(h));
            }
        }
    }

    /// Applies one `key=value` header line to `h`; `true` at `HEADER=END`.
    fn header_line(&self, h: &mut Header, key: &str, value: &str) -> Result<bool, ParseError> {
        match key {
            "HEADER" if value == "END" => {
                if h.duplicates && !h.flags.dupsort {
                    return Err(self.err(
                        "duplicates=1 without dupsort=1: unsorted duplicates (Berkeley DB's \
                         DB_DUP) are not supported, only sorted ones (dupsort=1)",
                    ));
                }
                return match h.flags.conflict() {
                    Some(why) => Err(self.err(why)),
                    None => Ok(true),
                };
            }
            "HEADER" => return Err(self.err(format!("expected HEADER=END, found HEADER={value}"))),
            "VERSION" => match value.parse::<u32>() {
                Ok(v) if v <= VERSION => {}
                _ => {
                    return Err(self.err(format!(
                        "unsupported VERSION {value} (this reads {VERSION} and older)"
                    )))
                }
            },
            "format" => {
                h.format = Some(match value {
                    "bytevalue" => Format::Bytevalue,
                    "print" => Format::Print,
                    _ => {
                        return Err(
                            self.err(format!("unsupported format {value:?} (bytevalue or print)"))
                        )
                    }
                })
            }
            "database" => {
                // The name is the rest of the raw line, which may not be UTF-8.
                let raw = &self.buf["database=".len()..];
                let name =
                    std::str::from_utf8(raw).map_err(|_| self.err("database name is not UTF-8"))?;
                h.database = Some((name.to_owned(), self.line));
            }
            "type" if value == "btree" => {}
            "type" => return Err(self.err(format!("unsupported type {value:?} (only btree)"))),
            "db_pagesize" => {
                h.page_size = value
                    .parse::<u32>()
                    .ok()
                    .filter(|p| p.is_power_of_two() && (512..=65536).contains(p));
            }
            "mapsize" | "maxreaders" | "mapaddr" => {}
            "duplicates" => h.duplicates = self.flag_value(key, value)?,
            _ => match h.flags.flag_mut(key) {
                Some(flag) => *flag = self.flag_value(key, value)?,
                None => h.ignored.push((self.line, key.to_owned())),
            },
        }
        Ok(false)
    }

    /// The setting of database flag `key`: `value` 0 or 1.
    fn flag_value(&self, key: &str, value: &str) -> Result<bool, ParseError> {
        match value {
            "0" => Ok(false),
            "1" => Ok(true),
            _ => Err(self.err(format!("{key}={value}: a database flag is 0 or 1"))),
        }
    }

    /// Reads one data line of a section into `out`; `false` at `DATA=END`.
    fn data_line(&mut self, format: Format, out: &mut Vec<u8>) -> Result<bool, ParseError> {
        if !self.next_line()? {
            return Err(self.err("input ended before DATA=END"));
        }
        if self.buf == b"DATA=END" {
            return Ok(false);
        }
        let Some(text) = self.buf.strip_prefix(b" ") else {
            let shown = String::from_utf8_lossy(&self.buf[..self.buf.len().min(40)]);
            return Err(self.err(format!(
                "expected a data line (a space, then the bytes) or DATA=END, found {shown:?}"
            )));
        };
        match format {
            Format::Bytevalue => decode_hex(text, out),
            Format::Print => decode_print(text, out),
        }
        .map_err(|m| self.err(m))?;
        Ok(true)
    }

    /// Reads the next key and value of a section into `key` and `value`;
    /// returns the key's line number, or `None` at `DATA=END`.
    ///
    /// Errors: a malformed line, a key without a value, or the end of the
    /// input before `DATA=END`.
    pub fn pair(
        &mut self,
        format: Format,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<Option<u64>, ParseError> {
        if !self.data_line(format, key)? {
            return Ok(None);
        }
        let key_line = self.line;
        if !self.data_line(format, value)? {
            return Err(self.err(format!("the key on line {key_line} has no value")));
        }
        Ok(Some(key_line))
    }

    /// Reads the next key and value of `mdb_load -T` plain text (lines
    /// without a leading space, `print`-escaped); returns the key's line
    /// number, or `None` at the end of the input.
    ///
    /// Errors: a bad escape, or a key line with no value line after it.
    pub fn plain_pair(
        &mut self,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<Option<u64>, ParseError> {
        if !self.next_line()? {
            return Ok(None);
        }
        decode_print(&self.buf, key).map_err(|m| self.err(m))?;
        let key_line = self.line;
        if !self.next_line()? {
            return Err(self.err(format!("the key on line {key_line} has no value")));
        }
        decode_print(&self.buf, value).map_err(|m| self.err(m))?;
        Ok(Some(key_line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(format: Format, bytes: &[u8]) -> String {
        let mut out = Vec::new();
        write_item(&mut out, format, bytes, &mut Vec::new()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn items_are_encoded_as_mdb_dump_does() {
        assert_eq!(encoded(Format::Bytevalue, b"\x00\xffA "), " 00ff4120\n");
        assert_eq!(encoded(Format::Bytevalue, b""), " \n");
        assert_eq!(
            encoded(Format::Print, b"a b\\c\n\x00\x7f~"),
            " a b\\\\c\\0a\\00\\7f~\n"
        );
        assert_eq!(encoded(Format::Print, b""), " \n");
    }

    #[test]
    fn every_byte_round_trips_in_both_formats() {
        let all: Vec<u8> = (0..=255).collect();
        let (mut enc, mut dec) = (Vec::new(), Vec::new());
        encode_hex(&all, &mut enc);
        decode_hex(&enc, &mut dec).unwrap();
        assert_eq!(dec, all);
        enc.clear();
        encode_print(&all, &mut enc);
        assert!(enc.iter().all(|b| (0x20..=0x7e).contains(b)));
        decode_print(&enc, &mut dec).unwrap();
        assert_eq!(dec, all);
    }

    #[test]
    fn decoding_accepts_upper_case_and_refuses_garbage() {
        let mut out = Vec::new();
        decode_hex(b"aBcD", &mut out).unwrap();
        assert_eq!(out, [0xab, 0xcd]);
        assert!(decode_hex(b"abc", &mut out).unwrap_err().contains("odd"));
        assert!(decode_hex(b"zz", &mut out)
            .unwrap_err()
            .contains("column 2"));
        decode_print(b"\\FF\\\\x", &mut out).unwrap();
        assert_eq!(out, b"\xff\\x");
        assert!(decode_print(b"ab\\g0", &mut out)
            .unwrap_err()
            .contains("column 3"));
        assert!(decode_print(b"\\a", &mut out).is_err());
        assert!(decode_print(b"\\", &mut out).is_err());
    }

    fn reader(text: &str) -> Reader<&[u8]> {
        Reader::new(text.as_bytes())
    }

    #[test]
    fn sections_are_read_with_their_headers() {
        let text = "VERSION=3\nformat=print\ndatabase=a b\ntype=btree\nmapsize=1048576\n\
                    maxreaders=126\ndb_pagesize=8192\nfrobs=7\nHEADER=END\n k\\00\n v\n \n \n\
                    DATA=END\n\nVERSION=3\nHEADER=END\n 00\n ff\nDATA=END\n";
        let mut r = reader(text);
        let h = r.header().unwrap().unwrap();
        assert_eq!(h.format(), Format::Print);
        assert_eq!(h.database, Some(("a b".to_owned(), 3)));
        assert_eq!(h.page_size, Some(8192));
        assert_eq!(h.ignored, [(8, "frobs".to_owned())]);
        let (mut k, mut v) = (Vec::new(), Vec::new());
        assert_eq!(r.pair(h.format(), &mut k, &mut v).unwrap(), Some(10));
        assert_eq!((&k[..], &v[..]), (&b"k\x00"[..], &b"v"[..]));
        assert_eq!(r.pair(h.format(), &mut k, &mut v).unwrap(), Some(12));
        assert_eq!((&k[..], &v[..]), (&b""[..], &b""[..]));
        assert_eq!(r.pair(h.format(), &mut k, &mut v).unwrap(), None);
        let h = r.header().unwrap().unwrap();
        assert_eq!(h.format(), Format::Bytevalue);
        assert_eq!(h.database, None);
        assert_eq!(r.pair(h.format(), &mut k, &mut v).unwrap(), Some(18));
        assert_eq!((&k[..], &v[..]), (&[0u8][..], &[0xffu8][..]));
        assert_eq!(r.pair(h.format(), &mut k, &mut v).unwrap(), None);
        assert_eq!(r.header().unwrap(), None);
    }

    fn header_error(text: &str) -> ParseError {
        reader(text).header().unwrap_err()
    }

    fn header_flags(lines: &str) -> DbFlags {
        let text = format!("VERSION=3\ntype=btree\n{lines}HEADER=END\n");
        reader(&text).header().unwrap().unwrap().flags
    }

    #[test]
    fn flags_are_read_and_written_in_mdb_dump_order() {
        let all = DbFlags {
            reversekey: true,
            dupsort: true,
            integerkey: false,
            dupfixed: true,
            integerdup: true,
            reversedup: false,
        };
        // The order of LMDB 0.9.24's mdb_dump, which the dump_load tests
        // check against the real one.
        assert_eq!(
            all.lines(),
            [
                "duplicates=1",
                "reversekey=1",
                "dupsort=1",
                "dupfixed=1",
                "integerdup=1"
            ]
        );
        let lines: String = all.lines().iter().map(|l| format!("{l}\n")).collect();
        assert_eq!(header_flags(&lines), all);
        assert!(DbFlags::default().lines().is_empty());
        let h = DumpHeader {
            format: Format::Bytevalue,
            database: Some("d"),
            mapsize: 1 << 20,
            maxreaders: 126,
            page_size: 4096,
            flags: DbFlags {
                dupsort: true,
                reversedup: true,
                ..DbFlags::default()
            },
        };
        let mut out = Vec::new();
        write_header(&mut out, &h).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "VERSION=3\nformat=bytevalue\ndatabase=d\ntype=btree\nmapsize=1048576\n\
             maxreaders=126\nduplicates=1\ndupsort=1\nreversedup=1\ndb_pagesize=4096\n\
             HEADER=END\n"
        );
        // NAME=0 leaves a flag unset; dupsort=1 alone is enough.
        assert_eq!(
            header_flags("integerkey=1\nintegerkey=0\ndupsort=1\n"),
            DbFlags {
                dupsort: true,
                ..DbFlags::default()
            }
        );
        assert_eq!(header_flags("duplicates=0\n"), DbFlags::default());
    }

    #[test]
    fn headers_sarsen_cannot_honour_are_refused() {
        let refused = [
            ("duplicates=1\n", "unsorted duplicates"),
            ("dupfixed=1\n", "dupfixed=1 without dupsort=1"),
            ("integerdup=1\n", "integerdup=1 without dupsort=1"),
            ("reversedup=1\n", "reversedup=1 without dupsort=1"),
            ("integerkey=1\nreversekey=1\n", "one key order"),
            (
                "dupsort=1\nintegerdup=1\nreversedup=1\n",
                "one order of values",
            ),
        ];
        for (lines, why) in refused {
            let text = format!("VERSION=3\ntype=btree\n{lines}HEADER=END\n");
            let e = header_error(&text);
            assert_eq!(u64::try_from(text.lines().count()).unwrap(), e.line);
            assert!(e.msg.contains(why), "{lines:?}: {e}");
        }
        let e = header_error("VERSION=3\ndupsort=yes\nHEADER=END\n");
        assert_eq!(e.line, 2);
        assert!(
            e.msg.contains("dupsort=yes: a database flag is 0 or 1"),
            "{e}"
        );
        assert!(header_error("VERSION=4\n").msg.contains("VERSION 4"));
        assert!(header_error("type=hash\n").msg.contains("hash"));
        assert!(header_error("format=xml\n").msg.contains("xml"));
        assert!(header_error("VERSION=3\nnonsense\n")
            .msg
            .contains("KEYWORD=VALUE"));
        assert_eq!(header_error("VERSION=3\n").line, 1);
        assert!(header_error("VERSION=3\n").msg.contains("no HEADER=END"));
        let bad_name = b"database=\xff\nHEADER=END\n";
        assert!(Reader::new(&bad_name[..]).header().is_err());
    }

    #[test]
    fn bad_data_lines_name_their_line() {
        let head = "VERSION=3\nHEADER=END\n";
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut read = |data: &str| {
            let text = format!("{head}{data}");
            let mut r = reader(&text);
            let h = r.header().unwrap().unwrap();
            loop {
                match r.pair(h.format(), &mut k, &mut v) {
                    Ok(Some(_)) => {}
                    Ok(None) => return None,
                    Err(e) => return Some(e),
                }
            }
        };
        assert_eq!(read(" 00\n 01\nDATA=END\n"), None);
        assert_eq!(read(" 00\n 01\n 0g\n 00\n").unwrap().line, 5);
        assert_eq!(read(" 00\n 01\n 012\n 00\n").unwrap().line, 5);
        assert_eq!(read("00\n 01\n").unwrap().line, 3);
        let e = read(" 00\nDATA=END\n").unwrap();
        assert_eq!(e.line, 4);
        assert!(e.msg.contains("line 3 has no value"), "{e}");
        let e = read(" 00\n 01\n").unwrap();
        assert!(e.msg.contains("before DATA=END"), "{e}");
    }

    #[test]
    fn plain_text_pairs_are_print_escaped_lines() {
        let mut r = reader("key\nva\\0alue\n\nlast");
        let (mut k, mut v) = (Vec::new(), Vec::new());
        assert_eq!(r.plain_pair(&mut k, &mut v).unwrap(), Some(1));
        assert_eq!((&k[..], &v[..]), (&b"key"[..], &b"va\nlue"[..]));
        assert_eq!(r.plain_pair(&mut k, &mut v).unwrap(), Some(3));
        assert_eq!((&k[..], &v[..]), (&b""[..], &b"last"[..]));
        assert_eq!(r.plain_pair(&mut k, &mut v).unwrap(), None);
        let mut r = reader("a\nb\nc\n");
        r.plain_pair(&mut k, &mut v).unwrap();
        let e = r.plain_pair(&mut k, &mut v).unwrap_err();
        assert!(e.msg.contains("line 3 has no value"), "{e}");
    }
}
