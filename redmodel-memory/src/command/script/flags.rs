//! Script flags (Redis 7.0's `scripts_flags_def`): declared by a function
//! at `redis.register_function`, or by an EVAL script in its
//! `#!lua flags=...` shebang line.

/// A set of script flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags(u8);

impl Flags {
    pub(crate) const NO_WRITES: Flags = Flags(1);
    pub(crate) const ALLOW_OOM: Flags = Flags(2);
    pub(crate) const ALLOW_STALE: Flags = Flags(4);
    pub(crate) const NO_CLUSTER: Flags = Flags(8);
    pub(crate) const ALLOW_CROSS_SLOT: Flags = Flags(16);
    /// An EVAL script without a shebang: Redis 6's rules (it may write,
    /// may touch keys of any slot, the other flags do not apply).
    pub(crate) const EVAL_COMPAT: Flags = Flags(128);

    /// The flags a script can declare, in Redis's order (FUNCTION LIST
    /// lists them in this order).
    pub(crate) const NAMED: [(Flags, &'static str); 5] = [
        (Flags::NO_WRITES, "no-writes"),
        (Flags::ALLOW_OOM, "allow-oom"),
        (Flags::ALLOW_STALE, "allow-stale"),
        (Flags::NO_CLUSTER, "no-cluster"),
        (Flags::ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    pub(crate) fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    pub(crate) fn insert(&mut self, other: Flags) {
        self.0 |= other.0;
    }

    /// The flag of this name; `case_sensitive` is false for functions'
    /// flags (`strcasecmp`), true for the shebang's (`strcmp`).
    pub(crate) fn named(name: &[u8], case_sensitive: bool) -> Option<Flags> {
        Self::NAMED.iter().find_map(|&(f, n)| {
            let same = if case_sensitive {
                name == n.as_bytes()
            } else {
                name.eq_ignore_ascii_case(n.as_bytes())
            };
            same.then_some(f)
        })
    }

    /// The names of the flags set, in Redis's order.
    pub(crate) fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMED
            .into_iter()
            .filter(move |&(f, _)| self.contains(f))
            .map(|(_, n)| n)
    }
}

/// An EVAL script's flags from its shebang (Redis's
/// `evalExtractShebangFlags`), and the length of the shebang line (the
/// newline excluded, so that the body compiled keeps its line numbers).
/// No shebang: [`Flags::EVAL_COMPAT`] and 0.
pub(crate) fn from_shebang(body: &[u8]) -> Result<(Flags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((Flags::EVAL_COMPAT, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    // C reads the shebang as a C string: a NUL ends it.
    let line = &body[..end];
    let line = line.split(|&b| b == 0).next().unwrap_or(line);
    let parts = crate::args::split_args(line).unwrap_or_default();
    let Some(engine) = parts.first() else {
        return Err("Invalid engine in script shebang".into());
    };
    if engine != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(engine)
        ));
    }
    let mut flags = Flags::default();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        // `sdssplitlen` of an empty string gives no parts: `flags=` is no
        // flag at all.
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&b| b == b',') {
            match Flags::named(name, true) {
                Some(f) => flags.insert(f),
                None => {
                    return Err(format!(
                        "Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(name)
                    ))
                }
            }
        }
    }
    Ok((flags, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs() {
        assert_eq!(from_shebang(b"return 1"), Ok((Flags::EVAL_COMPAT, 0)));
        assert_eq!(from_shebang(b"#!lua\nreturn 1"), Ok((Flags::default(), 5)));
        let (f, n) = from_shebang(b"#!lua flags=no-writes,allow-oom\nx").unwrap();
        assert!(f.contains(Flags::NO_WRITES) && f.contains(Flags::ALLOW_OOM));
        assert_eq!(n, 31);
        assert_eq!(from_shebang(b"#!lua"), Err("Invalid script shebang".into()));
        assert_eq!(
            from_shebang(b"#!py\n"),
            Err("Unexpected engine in script shebang: #!py".into())
        );
        assert_eq!(
            from_shebang(b"#!lua flags=no-writes,bad\n"),
            Err("Unexpected flag in script shebang: bad".into())
        );
        assert_eq!(
            from_shebang(b"#!lua name=x\n"),
            Err("Unknown lua shebang option: name=x".into())
        );
    }
}
