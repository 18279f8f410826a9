//! Redis's glob-style matcher (`stringmatchlen` in Redis's util.c), used by
//! KEYS and the MATCH option of the SCAN family.
//!
//! Ported rule for rule, including the corner cases that differ from shell
//! globs: a trailing backslash matches itself, an unclosed `[` class ends at
//! the pattern's end, `*` never matches an empty subject on its own (SCAN and
//! KEYS special-case the pattern `*`), and nesting of `*` is capped so a
//! hostile pattern cannot take exponential time.

const MAX_NESTING: usize = 1000;

/// Whether `subject` matches the glob `pattern`.
pub(crate) fn glob_match(pattern: &[u8], subject: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_impl(pattern, subject, nocase, &mut skip_longer, 0)
}

fn fold(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

fn match_impl(
    mut p: &[u8],
    mut s: &[u8],
    nocase: bool,
    skip_longer: &mut bool,
    nesting: usize,
) -> bool {
    if nesting > MAX_NESTING {
        return false;
    }
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() >= 2 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if match_impl(&p[1..], s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s = &s[1..],
            b'[' => {
                p = &p[1..];
                let not = p.first() == Some(&b'^');
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if p.len() >= 2 && p[0] == b'\\' {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if p.first() == Some(&b']') {
                        break;
                    } else if p.is_empty() {
                        // An unclosed class ends at the pattern's end; the
                        // step below must not move past it.
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        let (mut start, mut end) = (fold(p[0], nocase), fold(p[2], nocase));
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        let c = fold(s[0], nocase);
                        p = &p[2..];
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if fold(p[0], nocase) == fold(s[0], nocase) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
                if p.is_empty() {
                    // Redis steps back one so that the common `pattern++`
                    // below lands on the end; here we simply skip that step.
                    if s.is_empty() {
                        return true;
                    }
                    continue;
                }
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if fold(p[0], nocase) != fold(s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
            c => {
                if fold(c, nocase) != fold(s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn matches_like_redis() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", false),
            ("", "", true),
            ("a*", "a", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("user:\\*", "user:*", true),
            ("user:\\*", "user:x", false),
            ("a\\", "a\\", true),
            ("[abc", "a", true),
            ("[abc", "d", false),
            ("teacher:*", "teacher:A", true),
            ("teacher:*", "class:1", false),
        ];
        for (p, s, want) in cases {
            assert_eq!(
                glob_match(p.as_bytes(), s.as_bytes(), false),
                *want,
                "{p} ~ {s}"
            );
        }
    }

    #[test]
    fn hostile_pattern_terminates() {
        let p = "a*".repeat(50) + "b";
        let s = "a".repeat(60);
        assert!(!glob_match(p.as_bytes(), s.as_bytes(), false));
    }
}
