//! The AOF manifest, as Redis 7.0.15 writes and reads it: one line per
//! file, `file <name> seq <n> type <b|h|i>`, the base first, then the
//! history files, then the incremental ones in order. The files are named
//! `<appendfilename>.<seq>.base.rdb` (or `.base.aof` without the RDB
//! preamble) and `<appendfilename>.<seq>.incr.aof`, and the manifest
//! `<appendfilename>.manifest`, all in `appenddirname` under `dir`.

use std::fmt::Write as _;

/// One file the manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileInfo {
    pub(crate) name: String,
    pub(crate) seq: u64,
}

/// What a manifest lists: at most one base file and the incremental files
/// written since it, oldest first. History files are deleted as soon as
/// a rewrite replaces them, so a manifest the engine writes has none; one
/// Redis wrote may, and they are kept out of the loading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub(crate) base: Option<FileInfo>,
    pub(crate) history: Vec<FileInfo>,
    pub(crate) incrs: Vec<FileInfo>,
}

/// The longest manifest line Redis reads (`MANIFEST_MAX_LINE`).
const MAX_LINE: usize = 1024;

impl Manifest {
    /// Parses a manifest's text with Redis's checks: every line a
    /// `file`/`seq`/`type` triple of a known type, names without a path,
    /// one base at most, incremental files in increasing order.
    pub(crate) fn parse(text: &[u8]) -> Result<Manifest, String> {
        let text = std::str::from_utf8(text).map_err(|_| "the manifest is not text".to_string())?;
        let mut manifest = Manifest::default();
        let mut last_incr = 0;
        for (n, line) in text.lines().enumerate() {
            let at = |why: &str| format!("line {}: {why}", n + 1);
            if line.len() > MAX_LINE {
                return Err(at("the line is too long"));
            }
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if !words.len().is_multiple_of(2) {
                return Err(at("invalid AOF manifest file format"));
            }
            let (mut name, mut seq, mut kind) = (None, None, None);
            for pair in words.chunks(2) {
                match pair[0] {
                    "file" => name = Some(pair[1]),
                    "seq" => seq = pair[1].parse::<u64>().ok(),
                    "type" => kind = Some(pair[1]),
                    // Later versions may add keys: Redis skips them too.
                    _ => {}
                }
            }
            let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
                return Err(at("invalid AOF manifest file format"));
            };
            if name.contains('/') || name.contains('"') || name.contains('\'') {
                return Err(at("the file name is not a plain file name"));
            }
            let info = FileInfo {
                name: name.to_string(),
                seq,
            };
            match kind {
                "b" if manifest.base.is_some() => {
                    return Err(at("found duplicate base file information"))
                }
                "b" => manifest.base = Some(info),
                "h" => manifest.history.push(info),
                "i" => {
                    if seq <= last_incr {
                        return Err(at("found a non-monotonic sequence number"));
                    }
                    last_incr = seq;
                    manifest.incrs.push(info);
                }
                _ => return Err(at("unknown AOF file type")),
            }
        }
        Ok(manifest)
    }

    /// The manifest's text, as Redis writes it.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let lines = (self.base.iter().map(|f| (f, 'b')))
            .chain(self.history.iter().map(|f| (f, 'h')))
            .chain(self.incrs.iter().map(|f| (f, 'i')));
        for (file, kind) in lines {
            let _ = writeln!(out, "file {} seq {} type {kind}", file.name, file.seq);
        }
        out
    }

    /// The files to load, base first.
    pub(crate) fn to_load(&self) -> impl Iterator<Item = &FileInfo> {
        self.base.iter().chain(&self.incrs)
    }

    /// A new base's name and sequence number, the base there was (if
    /// any) moved to the history.
    pub(crate) fn next_base(&mut self, filename: &str, rdb: bool) -> FileInfo {
        let seq = self.base.as_ref().map_or(0, |b| b.seq) + 1;
        if let Some(old) = self.base.take() {
            self.history.push(old);
        }
        let suffix = if rdb { "rdb" } else { "aof" };
        FileInfo {
            name: format!("{filename}.{seq}.base.{suffix}"),
            seq,
        }
    }

    /// A new incremental file's name and sequence number, appended.
    pub(crate) fn push_incr(&mut self, filename: &str) -> FileInfo {
        let seq = self.incrs.last().map_or(0, |f| f.seq) + 1;
        let info = FileInfo {
            name: format!("{filename}.{seq}.incr.aof"),
            seq,
        };
        self.incrs.push(info.clone());
        info
    }

    /// After a rewrite: the incremental files it covers (all but the last
    /// `keep`) move to the history.
    pub(crate) fn retire_incrs(&mut self, keep: usize) {
        let retired = self.incrs.len().saturating_sub(keep);
        self.history.extend(self.incrs.drain(..retired));
    }
}

/// The manifest's file name.
pub(crate) fn manifest_name(filename: &str) -> String {
    format!("{filename}.manifest")
}

/// The incremental file a rewrite started by `CONFIG SET appendonly yes`
/// writes to until the rewrite is done (`getTempIncrAofName`).
pub(crate) fn temp_incr_name(filename: &str) -> String {
    format!("temp-{filename}.incr")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_what_it_renders() {
        let mut m = Manifest::default();
        let base = m.next_base("appendonly.aof", true);
        m.base = Some(base);
        m.push_incr("appendonly.aof");
        m.push_incr("appendonly.aof");
        let text = m.render();
        assert_eq!(
            text,
            "file appendonly.aof.1.base.rdb seq 1 type b\n\
             file appendonly.aof.1.incr.aof seq 1 type i\n\
             file appendonly.aof.2.incr.aof seq 2 type i\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()), Ok(m));
    }

    #[test]
    fn a_bad_manifest_is_an_error() {
        for bad in [
            "file a seq 1",
            "file a seq 1 type x",
            "file a seq x type b",
            "file a seq 1 type b\nfile b seq 2 type b",
            "file a seq 2 type i\nfile b seq 1 type i",
            "file ../a seq 1 type b",
        ] {
            assert!(Manifest::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
