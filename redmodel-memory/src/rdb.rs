//! Redis's RDB value format, as DUMP writes it and RESTORE (and FUNCTION
//! RESTORE) reads it: Redis 7.0.15's `rdb.c`, for one value at a time.
//!
//! A DUMP payload is an object type byte, the object, then a footer: the
//! RDB version (2 bytes, little endian) and the CRC64 (Jones polynomial,
//! 8 bytes, little endian) of everything before it. See [`seal`] and
//! [`open_as`].
//!
//! The compact encodings Redis copies into a payload as they are in memory
//! each have a module: [`listpack`], [`ziplist`] (older versions' lists,
//! hashes and sorted sets), [`intset`] and [`zipmap`] (Redis 2.4's
//! hashes), and [`lzf`] for compressed strings. [`value`] turns a whole
//! [`crate::value::Value`] into a payload and back, [`stream`] does the
//! streams.
//!
//! Everything read comes from a client, so nothing here trusts a length:
//! every read is checked against the bytes that remain ([`Reader`]), and
//! no buffer is sized from a count the payload declares before the bytes
//! it describes are known to be there. A payload is decoded whole, each
//! compact encoding validated as Redis's `sanitize-dump-payload yes`
//! does, so a corrupt payload is an error, never a broken value.

use std::borrow::Cow;

pub(crate) mod file;
pub(crate) mod hash_ttl;
pub(crate) mod intset;
pub(crate) mod listpack;
pub(crate) mod lzf;
pub(crate) mod stream;
pub(crate) mod value;
pub(crate) mod ziplist;
pub(crate) mod zipmap;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;

/// Redis 7.0's RDB version: a DUMP payload ends with it, and RESTORE
/// refuses a payload of a later version.
pub(crate) const RDB_VERSION: u16 = 10;

/// The RDB version of Redis `version`: 10 for 7.0, 12 for 7.4 (which
/// adds the hashes with field TTLs, [`kind::HASH_METADATA`] and
/// [`kind::HASH_LISTPACK_EX`]).
pub(crate) fn rdb_version(version: crate::RedisVersion) -> u16 {
    match version {
        crate::RedisVersion::V7_0 => RDB_VERSION,
        crate::RedisVersion::V7_4 => 12,
    }
}

/// Whether the object type `tag` is one Redis `version` reads (the hashes
/// with field TTLs came with 7.4).
pub(crate) fn reads_type(tag: u8, version: crate::RedisVersion) -> bool {
    !matches!(
        tag,
        kind::SET_LISTPACK
            | kind::STREAM_LISTPACKS_3
            | kind::HASH_METADATA
            | kind::HASH_LISTPACK_EX
    ) || version.has_field_expiry()
}

/// The object types of RDB version 10 (`RDB_TYPE_*` in `rdb.h`).
pub(crate) mod kind {
    pub(crate) const STRING: u8 = 0;
    pub(crate) const LIST: u8 = 1;
    pub(crate) const SET: u8 = 2;
    /// Sorted set with scores as text (before RDB 8).
    pub(crate) const ZSET: u8 = 3;
    pub(crate) const HASH: u8 = 4;
    /// Sorted set with binary scores.
    pub(crate) const ZSET_2: u8 = 5;
    pub(crate) const MODULE: u8 = 6;
    pub(crate) const MODULE_2: u8 = 7;
    pub(crate) const HASH_ZIPMAP: u8 = 9;
    pub(crate) const LIST_ZIPLIST: u8 = 10;
    pub(crate) const SET_INTSET: u8 = 11;
    pub(crate) const ZSET_ZIPLIST: u8 = 12;
    pub(crate) const HASH_ZIPLIST: u8 = 13;
    pub(crate) const LIST_QUICKLIST: u8 = 14;
    pub(crate) const STREAM_LISTPACKS: u8 = 15;
    pub(crate) const HASH_LISTPACK: u8 = 16;
    pub(crate) const ZSET_LISTPACK: u8 = 17;
    pub(crate) const LIST_QUICKLIST_2: u8 = 18;
    pub(crate) const STREAM_LISTPACKS_2: u8 = 19;
    /// A small set of strings in a listpack (RDB 11, Redis 7.2).
    pub(crate) const SET_LISTPACK: u8 = 20;
    /// A stream whose consumers have an active time (RDB 11).
    pub(crate) const STREAM_LISTPACKS_3: u8 = 21;
    /// A hash with field TTLs in a table (RDB 12, Redis 7.4).
    pub(crate) const HASH_METADATA: u8 = 24;
    /// A hash with field TTLs in a listpack of triples (RDB 12).
    pub(crate) const HASH_LISTPACK_EX: u8 = 25;
}

/// The tag of a library in FUNCTION DUMP's payload
/// (`RDB_OPCODE_FUNCTION2`).
pub(crate) const OPCODE_FUNCTION2: u8 = 245;

/// Redis's CRC64 (`crc64.c`): Jones polynomial, reflected, no final xor.
pub(crate) fn crc64(bytes: &[u8]) -> u64 {
    const CRC: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
    CRC.checksum(bytes)
}

/// Ends a payload with Redis's footer: the RDB version and the CRC64 of
/// all before it (`createDumpPayload`).
pub(crate) fn seal(payload: Vec<u8>) -> Vec<u8> {
    seal_as(payload, crate::RedisVersion::V7_0)
}

/// [`seal`] with the RDB version of Redis `version`.
pub(crate) fn seal_as(mut payload: Vec<u8>, version: crate::RedisVersion) -> Vec<u8> {
    payload.extend_from_slice(&rdb_version(version).to_le_bytes());
    let crc = crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

/// [`open_as`] as Redis 7.0 reads a payload.
#[cfg(test)]
pub(crate) fn open(payload: &[u8]) -> Option<&[u8]> {
    open_as(payload, crate::RedisVersion::V7_0)
}

/// The payload without its footer, if the footer's version is one Redis
/// `version` reads (7.0: RDB 10, 7.4: RDB 12) and the CRC64 matches
/// (`verifyDumpPayload`); `None` is "DUMP payload version or checksum are
/// wrong".
pub(crate) fn open_as(payload: &[u8], version: crate::RedisVersion) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(10)?;
    let (data, crc) = payload.split_at(payload.len() - 8);
    let found = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    if found > rdb_version(version) || crc64(data).to_le_bytes() != crc {
        return None;
    }
    Some(&payload[..body_len])
}

/// A length as RDB encodes it, or the tag of a specially encoded string
/// (`rdbLoadLenByRef`'s `isencoded`).
enum Length {
    Plain(u64),
    Encoded(u8),
}

/// The string encodings a length's tag names (`RDB_ENC_*`).
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// A cursor over a payload. Every read checks the bytes that remain and
/// gives `None` past the end, so a truncated or lying payload fails where
/// it lies.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    /// The bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(b)
    }

    /// The next `n` bytes, if there are that many.
    pub(crate) fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        if n > self.rest.len() {
            return None;
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N as u64)?.try_into().ok()
    }

    fn length_or_tag(&mut self) -> Option<Length> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Length::Plain(u64::from(first & 0x3f)),
            1 => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            3 => Length::Encoded(first & 0x3f),
            _ => match first {
                0x80 => Length::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Length::Plain(u64::from_be_bytes(self.array()?)),
                // No such length: Redis's `rdbLoadLen` reports it and
                // gives `RDB_LENERR` (the largest u64), which the fields
                // read without a check (a stream's IDs and counters) then
                // hold; everywhere else it is too long for what remains.
                _ => Length::Plain(u64::MAX),
            },
        })
    }

    /// A length (`rdbLoadLen`). Where Redis expects a length, the tag of
    /// an encoded string reads as its 6 bits, as `rdbLoadLen` reads it
    /// when not asked whether it was one.
    pub(crate) fn length(&mut self) -> Option<u64> {
        match self.length_or_tag()? {
            Length::Plain(n) => Some(n),
            Length::Encoded(tag) => Some(u64::from(tag)),
        }
    }

    /// The number of items that follow, each at least one byte long: a
    /// count the remaining bytes cannot hold is refused at once, so that
    /// no loop or buffer is ever sized by a lie.
    pub(crate) fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.length()?).ok()?;
        (n <= self.remaining()).then_some(n)
    }

    /// A string (`rdbGenericLoadStringObject`): raw, an integer in 1, 2 or
    /// 4 bytes (given back as its decimal text), or LZF-compressed.
    pub(crate) fn string(&mut self) -> Option<Cow<'a, [u8]>> {
        match self.length_or_tag()? {
            Length::Plain(n) => self.take(n).map(Cow::Borrowed),
            Length::Encoded(ENC_INT8) => {
                let v = i8::from_le_bytes(self.array()?);
                Some(Cow::Owned(v.to_string().into_bytes()))
            }
            Length::Encoded(ENC_INT16) => {
                let v = i16::from_le_bytes(self.array()?);
                Some(Cow::Owned(v.to_string().into_bytes()))
            }
            Length::Encoded(ENC_INT32) => {
                let v = i32::from_le_bytes(self.array()?);
                Some(Cow::Owned(v.to_string().into_bytes()))
            }
            Length::Encoded(ENC_LZF) => {
                let compressed_len = self.length()?;
                let len = self.length()?;
                let compressed = self.take(compressed_len)?;
                lzf::decompress(compressed, len).map(Cow::Owned)
            }
            Length::Encoded(_) => None,
        }
    }

    /// A string made an owned buffer.
    pub(crate) fn bytes(&mut self) -> Option<Vec<u8>> {
        self.string().map(Cow::into_owned)
    }

    /// A time in Unix milliseconds: 8 bytes, little endian
    /// (`rdbLoadMillisecondTime`).
    pub(crate) fn ms_time(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.array()?))
    }

    /// An IEEE 754 double, 8 bytes little endian (`rdbLoadBinaryDoubleValue`).
    pub(crate) fn binary_double(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.array()?))
    }

    /// A double as text after a length byte, with 253, 254 and 255 for
    /// NaN, +inf and -inf (`rdbLoadDoubleValue`, the scores of RDB
    /// versions before 8).
    pub(crate) fn text_double(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            len => {
                let text = self.take(u64::from(len))?;
                // Redis's `sscanf("%lg")` skips leading blanks; what Redis
                // itself wrote (`%.17g`) parses as a double argument does.
                let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
                crate::float::parse_double(&text[start..])
            }
        }
    }

    /// A stream ID stored raw: 16 bytes, ms then seq, big endian (a key of
    /// Redis's radix trees).
    pub(crate) fn raw_stream_id(&mut self) -> Option<crate::value::stream::StreamId> {
        let bytes: [u8; 16] = self.array()?;
        Some(stream::id_from_key(&bytes))
    }
}

/// Appends a length (`rdbSaveLen`): 6 bits, 14 bits, or a 32-bit or
/// 64-bit big-endian length after a tag byte.
pub(crate) fn put_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if let Ok(len) = u32::try_from(len) {
        out.push(0x80);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Writes a payload's body. Strings go as `rdbSaveRawString` writes
/// them: a short decimal integer that fits 32 bits in its integer
/// encoding; with `compress` (the `rdbcompression` setting, on by default)
/// a string over 20 bytes LZF-compressed if that saves at least 4 bytes;
/// anything else verbatim.
pub(crate) struct Writer {
    out: Vec<u8>,
    compress: bool,
}

impl Writer {
    pub(crate) fn new(compress: bool) -> Self {
        Writer {
            out: Vec::new(),
            compress,
        }
    }

    /// The bytes written.
    pub(crate) fn finish(self) -> Vec<u8> {
        self.out
    }

    pub(crate) fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    /// Bytes as they are (the raw stream IDs of a group's PEL).
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    pub(crate) fn length(&mut self, n: u64) {
        put_length(&mut self.out, n);
    }

    pub(crate) fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 {
            if let Some(v) = crate::args::parse_i64(s) {
                if let Ok(v) = i8::try_from(v) {
                    self.out.push(0xc0 | ENC_INT8);
                    self.out.extend_from_slice(&v.to_le_bytes());
                    return;
                }
                if let Ok(v) = i16::try_from(v) {
                    self.out.push(0xc0 | ENC_INT16);
                    self.out.extend_from_slice(&v.to_le_bytes());
                    return;
                }
                if let Ok(v) = i32::try_from(v) {
                    self.out.push(0xc0 | ENC_INT32);
                    self.out.extend_from_slice(&v.to_le_bytes());
                    return;
                }
            }
        }
        if self.compress && s.len() > 20 {
            if let Some(compressed) = lzf::compress(s, s.len() - 4) {
                self.out.push(0xc0 | ENC_LZF);
                self.length(compressed.len() as u64);
                self.length(s.len() as u64);
                self.out.extend_from_slice(&compressed);
                return;
            }
        }
        self.length(s.len() as u64);
        self.out.extend_from_slice(s);
    }

    /// A time in Unix milliseconds (`rdbSaveMillisecondTime`).
    pub(crate) fn ms_time(&mut self, ms: i64) {
        self.out.extend_from_slice(&ms.to_le_bytes());
    }

    /// A binary double (`rdbSaveBinaryDoubleValue`).
    pub(crate) fn binary_double(&mut self, v: f64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
}

/// An element of a listpack or ziplist: both store integers apart from
/// strings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Elem<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Elem<'_> {
    /// The element as the string Redis gives back for it.
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        match self {
            Elem::Int(v) => v.to_string().into_bytes(),
            Elem::Str(s) => s.to_vec(),
        }
    }

    /// The element as an integer, a string element included if it reads
    /// as one (`lpGetIntegerIfValid`).
    pub(crate) fn as_int(self) -> Option<i64> {
        match self {
            Elem::Int(v) => Some(v),
            Elem::Str(s) => crate::args::parse_i64(s),
        }
    }
}
