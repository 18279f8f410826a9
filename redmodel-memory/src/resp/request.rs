//! Reading client requests off the wire, as Redis 7.0.15 does
//! (`processMultibulkBuffer`, `processInlineBuffer` and `sdssplitargs` in
//! networking.c and sds.c).
//!
//! The parser is incremental: it keeps the state of a request that has not
//! arrived whole (how many arguments are still due, the length of the bulk
//! being read), so a request sent in many small pieces is scanned once, not
//! once per piece. Arguments of a RESP request are ranges of the caller's
//! read buffer (no copy); inline arguments are unquoted into owned bytes.
//!
//! Redis's limits are enforced before anything is allocated for them: a
//! header that announces two billion arguments or a 4 GB bulk string costs
//! nothing until the bytes really arrive.

use std::ops::Range;

use crate::args::{parse_i64, split_args};

/// Longest inline request, and longest `*`/`$` header line, Redis waits for
/// (`PROTO_INLINE_MAX_SIZE`).
pub(super) const INLINE_MAX: usize = 64 * 1024;
/// Longest bulk argument (`proto-max-bulk-len`, 512 MB by default).
pub(super) const BULK_MAX: i64 = 512 * 1024 * 1024;
/// Most arguments in one request: Redis 7.0 accepts up to `INT_MAX` (6.x
/// had 1024*1024) and, like it, allocates for at most [`ARGV_PREALLOC`] up
/// front, growing only as arguments arrive.
pub(super) const MULTIBULK_MAX: i64 = i32::MAX as i64;
/// Argument slots reserved when a request header is read.
const ARGV_PREALLOC: usize = 1024;

/// One complete request.
#[derive(Debug, PartialEq)]
pub(super) enum Request {
    /// A RESP array of bulk strings; the arguments are ranges of the buffer
    /// given to [`Parser::next`].
    Multibulk(Vec<Range<usize>>),
    /// A telnet-style line, split and unquoted.
    Inline(Vec<Vec<u8>>),
}

impl Request {
    /// The arguments as byte slices (`buf` is the buffer it was parsed from).
    /// Empty for `*0`, `*-1` and blank lines, which Redis silently skips.
    /// (The server reads them into a vector it reuses.)
    #[cfg(test)]
    pub(super) fn args<'a>(&'a self, buf: &'a [u8]) -> Vec<&'a [u8]> {
        match self {
            Request::Multibulk(ranges) => ranges
                .iter()
                .map(|r| buf.get(r.clone()).unwrap_or_default())
                .collect(),
            Request::Inline(args) => args.iter().map(Vec::as_slice).collect(),
        }
    }
}

/// A malformed request. Redis replies with the error and closes the
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProtocolError {
    InvalidMultibulkLength,
    InvalidBulkLength,
    /// A bulk header did not start with `$`; holds the byte found instead.
    ExpectedDollar(u8),
    TooBigInline,
    TooBigMultibulkCount,
    TooBigBulkCount,
    UnbalancedQuotes,
}

impl ProtocolError {
    /// The error line Redis sends, without the leading `-` and the CRLF. Not
    /// always UTF-8: the unexpected byte is echoed as is.
    pub(super) fn line(self) -> Vec<u8> {
        let text = match self {
            ProtocolError::InvalidMultibulkLength => "invalid multibulk length",
            ProtocolError::InvalidBulkLength => "invalid bulk length",
            ProtocolError::TooBigInline => "too big inline request",
            ProtocolError::TooBigMultibulkCount => "too big mbulk count string",
            ProtocolError::TooBigBulkCount => "too big bulk count string",
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request",
            ProtocolError::ExpectedDollar(byte) => {
                // Redis turns CR and LF of an error line into spaces.
                let shown = if byte == b'\r' || byte == b'\n' {
                    b' '
                } else {
                    byte
                };
                let mut line = b"ERR Protocol error: expected '$', got '".to_vec();
                line.push(shown);
                line.push(b'\'');
                return line;
            }
        };
        format!("ERR Protocol error: {text}").into_bytes()
    }
}

/// A RESP request of which only part has arrived.
#[derive(Debug)]
struct Pending {
    /// Where the request starts in the buffer (kept until it is complete).
    start: usize,
    /// Arguments still to read.
    remaining: usize,
    /// Length of the bulk argument whose header was read, if any.
    bulk_len: Option<usize>,
    args: Vec<Range<usize>>,
}

/// Incremental request parser of one connection.
#[derive(Debug, Default)]
pub(super) struct Parser {
    /// Read position in the buffer.
    pos: usize,
    pending: Option<Pending>,
    /// The argument list of a request already served, given back by
    /// [`Self::recycle`] for the next one: a pipeline of small requests
    /// then allocates nothing per request to read them.
    spare: Vec<Range<usize>>,
}

/// Outcome of one parsing step.
type Step = Result<Option<Request>, ProtocolError>;

impl Parser {
    /// The next complete request in `buf` (the bytes read so far, of which
    /// the parser has consumed a prefix), or `None` until more bytes arrive.
    pub(super) fn next(&mut self, buf: &[u8]) -> Step {
        if self.pending.is_none() {
            match buf.get(self.pos) {
                None => return Ok(None),
                Some(b'*') => {
                    if !self.start_multibulk(buf)? {
                        return Ok(None);
                    }
                    if self.pending.is_none() {
                        // `*0` or a negative count: an empty request.
                        return Ok(Some(Request::Multibulk(Vec::new())));
                    }
                }
                Some(_) => return self.inline(buf),
            }
        }
        self.bulks(buf)
    }

    /// Takes back a request that has been served, to reuse its memory.
    /// One that grew past [`ARGV_PREALLOC`] arguments is freed instead, as
    /// Redis frees a big `argv`.
    pub(super) fn recycle(&mut self, mut args: Vec<Range<usize>>) {
        if args.capacity() <= ARGV_PREALLOC && args.capacity() > self.spare.capacity() {
            args.clear();
            self.spare = args;
        }
    }

    /// How many leading bytes of the buffer the parser no longer needs.
    pub(super) fn consumed(&self) -> usize {
        self.pending.as_ref().map_or(self.pos, |p| p.start)
    }

    /// The caller dropped the first `n` bytes (at most [`Self::consumed`])
    /// of the buffer: move every position back by `n`.
    pub(super) fn discard(&mut self, n: usize) {
        self.pos -= n;
        if let Some(p) = &mut self.pending {
            p.start -= n;
            for r in &mut p.args {
                *r = r.start - n..r.end - n;
            }
        }
    }

    /// Reads a `*<count>` header. Returns false if the line is incomplete.
    fn start_multibulk(&mut self, buf: &[u8]) -> Result<bool, ProtocolError> {
        let (count, len) = match plain_header(buf, self.pos, b'*') {
            // Nine digits at most: always within MULTIBULK_MAX.
            Some((count, len)) => (count as i64, len),
            None => {
                let Some(len) = header_line(buf, self.pos, ProtocolError::TooBigMultibulkCount)?
                else {
                    return Ok(false);
                };
                let count = parse_i64(&buf[self.pos + 1..self.pos + len])
                    .filter(|&n| n <= MULTIBULK_MAX)
                    .ok_or(ProtocolError::InvalidMultibulkLength)?;
                (count, len)
            }
        };
        let start = self.pos;
        // The byte after CR is skipped unchecked, as Redis does.
        self.pos += len + 2;
        if let Ok(remaining @ 1..) = usize::try_from(count) {
            let mut args = std::mem::take(&mut self.spare);
            args.reserve(remaining.min(ARGV_PREALLOC));
            self.pending = Some(Pending {
                start,
                remaining,
                bulk_len: None,
                args,
            });
        }
        Ok(true)
    }

    /// Reads the `$<len>` headers and bodies of a pending request.
    fn bulks(&mut self, buf: &[u8]) -> Step {
        let Some(p) = self.pending.as_mut() else {
            return Ok(None);
        };
        while p.remaining > 0 {
            let bulk_len = match p.bulk_len {
                Some(n) => n,
                None => {
                    let (n, len) = match plain_header(buf, self.pos, b'$') {
                        Some((n, len)) if n <= BULK_MAX as usize => (n, len),
                        _ => {
                            let Some(len) =
                                header_line(buf, self.pos, ProtocolError::TooBigBulkCount)?
                            else {
                                return Ok(None);
                            };
                            let first = buf[self.pos];
                            if first != b'$' {
                                return Err(ProtocolError::ExpectedDollar(first));
                            }
                            let n = parse_i64(&buf[self.pos + 1..self.pos + len])
                                .filter(|n| (0..=BULK_MAX).contains(n))
                                .and_then(|n| usize::try_from(n).ok())
                                .ok_or(ProtocolError::InvalidBulkLength)?;
                            (n, len)
                        }
                    };
                    self.pos += len + 2;
                    p.bulk_len = Some(n);
                    n
                }
            };
            // The body and the two bytes after it (CRLF, not checked).
            if buf.len() - self.pos < bulk_len + 2 {
                return Ok(None);
            }
            p.args.push(self.pos..self.pos + bulk_len);
            self.pos += bulk_len + 2;
            p.bulk_len = None;
            p.remaining -= 1;
        }
        Ok(self.pending.take().map(|p| Request::Multibulk(p.args)))
    }

    /// Reads one inline request, a line ending in LF or CRLF.
    fn inline(&mut self, buf: &[u8]) -> Step {
        let rest = &buf[self.pos..];
        let Some(lf) = c_strchr(rest, b'\n') else {
            return if rest.len() > INLINE_MAX {
                Err(ProtocolError::TooBigInline)
            } else {
                Ok(None)
            };
        };
        let end = if lf > 0 && rest[lf - 1] == b'\r' {
            lf - 1
        } else {
            lf
        };
        let args = split_args(&rest[..end]).ok_or(ProtocolError::UnbalancedQuotes)?;
        self.pos += lf + 1;
        Ok(Some(Request::Inline(args)))
    }
}

/// The header line every client sends, read in one pass: `kind`, one to
/// nine digits without a leading zero, CR, and the byte after the CR
/// already there. Its value and its length up to the CR; `None` for
/// anything else (a sign, a NUL, a long or incomplete line, a wrong
/// kind), which the general path ([`header_line`] and `parse_i64`) reads
/// with Redis's errors and waiting rules. Scanning for the CR and then
/// parsing the digits apart was a tenth of a small request's cost.
fn plain_header(buf: &[u8], pos: usize, kind: u8) -> Option<(usize, usize)> {
    let rest = buf.get(pos..)?;
    if rest.first() != Some(&kind) {
        return None;
    }
    let mut n = 0usize;
    let mut i = 1;
    while let Some(&digit @ b'0'..=b'9') = rest.get(i) {
        // Ten digits, or a second digit after a leading zero.
        if i > 9 || (i == 2 && n == 0) {
            return None;
        }
        n = n * 10 + usize::from(digit - b'0');
        i += 1;
    }
    (i > 1 && rest.get(i) == Some(&b'\r') && rest.len() > i + 1).then_some((n, i))
}

/// The length of the header line at `pos` (up to, not including, its CR),
/// once the CR and the byte after it have arrived. Without a CR, waits for
/// more bytes unless more than [`INLINE_MAX`] are already there.
fn header_line(
    buf: &[u8],
    pos: usize,
    too_big: ProtocolError,
) -> Result<Option<usize>, ProtocolError> {
    let rest = &buf[pos..];
    match c_strchr(rest, b'\r') {
        None if rest.len() > INLINE_MAX => Err(too_big),
        None => Ok(None),
        Some(cr) if cr + 2 > rest.len() => Ok(None),
        Some(cr) => Ok(Some(cr)),
    }
}

/// C's `strchr` on Redis's NUL-terminated query buffer: the first `byte`
/// before any NUL. Redis does not see a line end past a NUL byte (it keeps
/// waiting, up to the 64 KB limit); neither do we.
fn c_strchr(bytes: &[u8], byte: u8) -> Option<usize> {
    bytes
        .iter()
        .position(|&b| b == byte || b == 0)
        .filter(|&i| bytes[i] == byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses all of `input` given at once; returns the requests' arguments
    /// and the error that stopped it, if any.
    fn parse_all(input: &[u8]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        loop {
            match parser.next(input) {
                Ok(Some(req)) => out.push(req.args(input).iter().map(|a| a.to_vec()).collect()),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    fn args(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_and_inline_requests_in_one_buffer() {
        let (reqs, err) =
            parse_all(b"*2\r\n$4\r\nECHO\r\n$3\r\na b\r\nPING\r\nSET k 'v 1'\n*0\r\n\r\n");
        assert_eq!(err, None);
        assert_eq!(
            reqs,
            vec![
                args(&["ECHO", "a b"]),
                args(&["PING"]),
                args(&["SET", "k", "v 1"]),
                vec![],
                vec![],
            ]
        );
    }

    /// The one-pass header reading (`plain_header`) leaves leading zeros,
    /// signs and NULs to the general path and its errors.
    #[test]
    fn headers_read_in_one_pass_or_by_the_general_path() {
        let (reqs, err) = parse_all(b"*1\r\n$0\r\n\r\n*2\r\n$1\r\na\r\n$10\r\n0123456789\r\n");
        assert_eq!(err, None);
        assert_eq!(reqs, vec![args(&[""]), args(&["a", "0123456789"])]);
        for (input, want) in [
            (
                &b"*1\r\n$03\r\nabc\r\n"[..],
                ProtocolError::InvalidBulkLength,
            ),
            (b"*1\r\n$-3\r\nabc\r\n", ProtocolError::InvalidBulkLength),
            (
                b"*1\r\n$1234567890\r\nabc\r\n",
                ProtocolError::InvalidBulkLength,
            ),
            (b"*01\r\n$1\r\na\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1x\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1\r\n:1\r\n", ProtocolError::ExpectedDollar(b':')),
        ] {
            assert_eq!(parse_all(input), (vec![], Some(want)), "{input:?}");
        }
        // A NUL before the CR: no line end yet, as in Redis.
        assert_eq!(parse_all(b"*1\r\n$1\0\r\na\r\n"), (vec![], None));
    }

    #[test]
    fn byte_by_byte_gives_the_same_requests() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\nECHO \"x\\x41\"\r\n";
        let mut parser = Parser::default();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        for &b in input.iter() {
            buf.push(b);
            while let Some(req) = parser.next(&buf).unwrap() {
                got.push(
                    req.args(&buf)
                        .iter()
                        .map(|a| a.to_vec())
                        .collect::<Vec<_>>(),
                );
            }
            // Drop what is consumed, as the server does.
            let n = parser.consumed();
            buf.drain(..n);
            parser.discard(n);
        }
        assert_eq!(
            got,
            vec![args(&["SET", "k", "0123456789"]), args(&["ECHO", "xA"])]
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn protocol_errors_have_redis_texts() {
        let cases: &[(&[u8], &str)] = &[
            (b"*abc\r\n", "ERR Protocol error: invalid multibulk length"),
            (
                b"*2147483648\r\n",
                "ERR Protocol error: invalid multibulk length",
            ),
            (b"*01\r\n", "ERR Protocol error: invalid multibulk length"),
            (b"*+1\r\n", "ERR Protocol error: invalid multibulk length"),
            (b"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"),
            (
                b"*1\r\n$536870913\r\n",
                "ERR Protocol error: invalid bulk length",
            ),
            (b"*1\r\n$04\r\n", "ERR Protocol error: invalid bulk length"),
            (b"*1\r\nx4\r\n", "ERR Protocol error: expected '$', got 'x'"),
            (b"*1\r\n*4\r\n", "ERR Protocol error: expected '$', got '*'"),
            (b"*1\r\n\r\n", "ERR Protocol error: expected '$', got ' '"),
            (b"*1\r\n\n\r\n", "ERR Protocol error: expected '$', got ' '"),
            (
                b"PING \"a\r\n",
                "ERR Protocol error: unbalanced quotes in request",
            ),
            (
                b"PING \"a\"b\r\n",
                "ERR Protocol error: unbalanced quotes in request",
            ),
            (
                b"PING 'a'b\r\n",
                "ERR Protocol error: unbalanced quotes in request",
            ),
        ];
        for (input, want) in cases {
            let (_, err) = parse_all(input);
            let err = err.unwrap_or_else(|| panic!("no error for {input:?}"));
            assert_eq!(
                String::from_utf8_lossy(&err.line()),
                *want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        let (_, err) = parse_all(b"*1\r\n\xff\r\n");
        assert_eq!(
            err.map(ProtocolError::line),
            Some(b"ERR Protocol error: expected '$', got '\xff'".to_vec())
        );
    }

    #[test]
    fn big_declared_lengths_wait_without_allocating() {
        // Valid headers announcing huge requests: nothing to do until the
        // bytes come; the argument vector is capped.
        let mut parser = Parser::default();
        assert_eq!(parser.next(b"*2147483647\r\n"), Ok(None));
        assert!(parser.pending.as_ref().unwrap().args.capacity() <= ARGV_PREALLOC);
        let mut parser = Parser::default();
        assert_eq!(parser.next(b"*1\r\n$536870912\r\nabc"), Ok(None));
    }

    #[test]
    fn header_and_inline_length_limits() {
        let mut inline = b"PING ".to_vec();
        inline.resize(INLINE_MAX + 1, b'a');
        assert_eq!(parse_all(&inline).1, Some(ProtocolError::TooBigInline));
        inline.truncate(INLINE_MAX);
        assert_eq!(parse_all(&inline), (vec![], None));
        let mut count = b"*".to_vec();
        count.resize(INLINE_MAX + 1, b'1');
        assert_eq!(
            parse_all(&count).1,
            Some(ProtocolError::TooBigMultibulkCount)
        );
        let mut bulk = b"*1\r\n$".to_vec();
        bulk.resize(INLINE_MAX + 10, b'1');
        assert_eq!(parse_all(&bulk).1, Some(ProtocolError::TooBigBulkCount));
        // A long inline line that arrived whole is accepted.
        let mut echo = b"ECHO ".to_vec();
        echo.resize(70_000, b'a');
        echo.extend_from_slice(b"\r\n");
        assert_eq!(parse_all(&echo).0[0][1].len(), 70_000 - 5);
    }

    #[test]
    fn truncated_requests_wait() {
        for input in [
            &b"*1\r\n$4\r\nPING"[..],
            b"*1\r\n$4\r\nPING\r",
            b"*1\r",
            b"*1\r\n$4\r",
            b"PING",
            b"PING \"unterminated",
        ] {
            assert_eq!(parse_all(input), (vec![], None), "{input:?}");
        }
    }

    #[test]
    fn redis_quirks_are_kept() {
        // The two bytes after a header or a body are skipped unchecked.
        assert_eq!(
            parse_all(b"*1\rX$4\r\nPINGxx*1\r\n$4\r\nPING\r\n").0,
            vec![args(&["PING"]), args(&["PING"])]
        );
        // A NUL hides a later line end: Redis keeps waiting.
        assert_eq!(parse_all(b"*1\0\r\n$4\r\nPING\r\n"), (vec![], None));
        assert_eq!(parse_all(b"ECHO a\0b\r\n"), (vec![], None));
        // NUL inside a bulk is data.
        assert_eq!(
            parse_all(b"*1\r\n$3\r\na\0b\r\n").0,
            vec![vec![b"a\0b".to_vec()]]
        );
        // Negative counts are empty requests.
        assert_eq!(parse_all(b"*-5\r\n").0, vec![Vec::<Vec<u8>>::new()]);
    }

    #[test]
    fn sdssplitargs_rules() {
        let ok: &[(&[u8], &[&[u8]])] = &[
            (b"", &[]),
            (b"   \t ", &[]),
            (b"a  b\tc", &[b"a", b"b", b"c"]),
            (b"\"\\x41\\n\\q\\x4g\"", &[b"A\nqx4g"]),
            (b"'it\\'s \\n'", &[b"it's \\n"]),
            (b"\"a b\" 'c d'", &[b"a b", b"c d"]),
            (b"\"\"", &[b""]),
            (b"a\x0bb", &[b"a\x0bb"]),
            (b"\"a\"\x0bb", &[b"a", b"b"]),
            (b"x\"y\"", &[b"xy"]),
            (b"\"\\xff\\x00\"", &[b"\xff\x00"]),
            (b"\"\\\"\"", &[b"\""]),
        ];
        for (line, want) in ok {
            let want: Vec<Vec<u8>> = want.iter().map(|a| a.to_vec()).collect();
            assert_eq!(
                split_args(line),
                Some(want),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        for bad in [&b"\"a"[..], b"'a", b"\"a\"b", b"'a'b", b"\"a\\\""] {
            assert_eq!(split_args(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// Everything the parser yields for `input` fed in pieces cut at
    /// `cuts`, dropping consumed bytes as the server does.
    fn parse_chunked(input: &[u8], cuts: &[usize]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
        let mut parser = Parser::default();
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            let cut = cut.clamp(from, input.len());
            buf.extend_from_slice(&input[from..cut]);
            from = cut;
            loop {
                match parser.next(&buf) {
                    Ok(Some(req)) => out.push(req.args(&buf).iter().map(|a| a.to_vec()).collect()),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
            let n = parser.consumed();
            buf.drain(..n);
            parser.discard(n);
        }
        (out, None)
    }

    /// Random inputs made of protocol-ish bytes: the parser never panics,
    /// and the result does not depend on how the bytes were split, except
    /// where Redis's own limits depend on it (inputs stay far below them).
    #[test]
    fn random_inputs_never_panic_and_chunking_does_not_matter() {
        const ALPHABET: &[u8] = b"*$\r\n\r\n0123-9 \"'\\xaAPING\0\x7f\xff";
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let len = (next() % 40) as usize;
            let mut input: Vec<u8> = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            // Half of the inputs start like a real request.
            if next() % 2 == 0 {
                input.splice(0..0, b"*2\r\n$4\r\nECHO\r\n$".iter().copied());
            }
            let whole = parse_all(&input);
            let cuts: Vec<usize> = {
                let mut c: Vec<usize> = (0..3)
                    .map(|_| (next() as usize) % (input.len() + 1))
                    .collect();
                c.sort_unstable();
                c
            };
            assert_eq!(
                parse_chunked(&input, &cuts),
                whole,
                "{:?} cut at {cuts:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }
}
