//! ACL SETUSER's rules, read as Redis 7.0.15's `ACLSetUser` and
//! `ACLSetSelector` read them, with their error texts.

use super::{
    category_bit, hash_password, lookup_command, KeyPattern, Selector, User, COMMANDS, READ, WRITE,
};
use crate::args::{is, split_args};

/// Why a rule was refused (Redis's `errno` of `ACLSetUser`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleError {
    /// ENOENT
    Unknown,
    /// EINVAL
    Syntax,
    /// EEXIST
    KeyAfterAll,
    /// EISDIR
    ChannelAfterAll,
    /// ENODEV
    NoSuchPassword,
    /// EBADMSG
    BadHash,
    /// ECHILD
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's `ACLSetUserStringError`.
    pub(crate) fn text(self) -> &'static str {
        match self {
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of \
                 patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list \
                 of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// Redis's `ACLStringHasSpaces`: spaces (C's `isspace`) or NUL.
pub(crate) fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r' | 0))
}

/// A `#hash` / `!hash`: 64 lower-case hex digits.
fn valid_hash(hash: &[u8]) -> bool {
    hash.len() == 64 && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// ACL SETUSER: the rules applied to a copy of `existing` (or a new user
/// named `name`), all or nothing. The error is the reply's message.
/// `all_channels` is `acl-pubsub-default allchannels`: new selectors (and
/// `reset`) allow every channel.
pub(crate) fn set_user(
    existing: Option<&User>,
    name: &[u8],
    rules: &[&[u8]],
    all_channels: bool,
) -> Result<User, String> {
    let merged = merge_selectors(rules).map_err(|at| {
        format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(rules[at])
        )
    })?;
    let mut user = existing.cloned().unwrap_or_else(|| {
        let mut user = User::new(name);
        user.selectors[0].all_channels = all_channels;
        user
    });
    for rule in &merged {
        apply_with(&mut user, rule, all_channels).map_err(|e| {
            format!(
                "Error in ACL SETUSER modifier '{}': {}",
                String::from_utf8_lossy(rule),
                e.text()
            )
        })?;
    }
    Ok(user)
}

/// Redis's `ACLMergeSelectorArguments`: a selector given over several
/// arguments (`(~x` `+get)`) is joined with spaces. `Err` holds the
/// argument that opens an unclosed one.
fn merge_selectors(rules: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::with_capacity(rules.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &rule) in rules.iter().enumerate() {
        if let Some((_, selector)) = open.as_mut() {
            selector.push(b' ');
            selector.extend_from_slice(rule);
            if rule.last() == Some(&b')') {
                if let Some((_, selector)) = open.take() {
                    out.push(selector);
                }
            }
            continue;
        }
        if rule.first() == Some(&b'(') && rule.last() != Some(&b')') {
            open = Some((i, rule.to_vec()));
            continue;
        }
        out.push(rule.to_vec());
    }
    match open {
        Some((at, _)) => Err(at),
        None => Ok(out),
    }
}

/// Redis's `ACLSetUser`: one rule applied to `user`.
pub(crate) fn apply(user: &mut User, op: &[u8]) -> Result<(), RuleError> {
    apply_with(user, op, false)
}

/// [`apply`] under `acl-pubsub-default` (`all_channels`: `allchannels`).
fn apply_with(user: &mut User, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
    if op.is_empty() {
        return Ok(());
    }
    if is(op, "on") {
        user.enabled = true;
    } else if is(op, "off") {
        user.enabled = false;
    } else if is(op, "skip-sanitize-payload") {
        user.sanitize = Some(false);
    } else if is(op, "sanitize-payload") {
        user.sanitize = Some(true);
    } else if is(op, "nopass") {
        user.nopass = true;
        user.passwords.clear();
    } else if is(op, "resetpass") {
        user.nopass = false;
        user.passwords.clear();
    } else if op[0] == b'>' || op[0] == b'#' {
        let hash = if op[0] == b'>' {
            hash_password(&op[1..])
        } else if valid_hash(&op[1..]) {
            String::from_utf8_lossy(&op[1..]).into_owned()
        } else {
            return Err(RuleError::BadHash);
        };
        if !user.passwords.contains(&hash) {
            user.passwords.push(hash);
        }
        user.nopass = false;
    } else if op[0] == b'<' || op[0] == b'!' {
        let hash = if op[0] == b'<' {
            hash_password(&op[1..])
        } else if valid_hash(&op[1..]) {
            String::from_utf8_lossy(&op[1..]).into_owned()
        } else {
            return Err(RuleError::BadHash);
        };
        let at = user
            .passwords
            .iter()
            .position(|p| *p == hash)
            .ok_or(RuleError::NoSuchPassword)?;
        user.passwords.remove(at);
    } else if op[0] == b'(' && op.last() == Some(&b')') {
        let inner = &op[1..op.len() - 1];
        let mut selector = Selector {
            all_channels,
            ..Selector::default()
        };
        // Unbalanced quotes give no rules, as Redis's `sdssplitargs`.
        for rule in split_args(inner).unwrap_or_default() {
            apply_selector(&mut selector, &rule)?;
        }
        user.selectors.push(selector);
    } else if is(op, "clearselectors") {
        user.selectors.truncate(1);
    } else if is(op, "reset") {
        for rule in [
            "resetpass",
            "resetkeys",
            "resetchannels",
            if all_channels { "allchannels" } else { "" },
            "off",
            "sanitize-payload",
            "clearselectors",
            "-@all",
        ] {
            apply(user, rule.as_bytes())?;
        }
    } else {
        apply_selector(&mut user.selectors[0], op)?;
    }
    Ok(())
}

/// Redis's `ACLSetSelector`: a rule of commands, keys or channels.
pub(crate) fn apply_selector(s: &mut Selector, op: &[u8]) -> Result<(), RuleError> {
    if is(op, "allkeys") || op == b"~*" {
        s.all_keys = true;
        s.keys.clear();
    } else if is(op, "resetkeys") {
        s.all_keys = false;
        s.keys.clear();
    } else if is(op, "allchannels") || op == b"&*" {
        s.all_channels = true;
        s.channels.clear();
    } else if is(op, "resetchannels") {
        s.all_channels = false;
        s.channels.clear();
    } else if is(op, "allcommands") || is(op, "+@all") {
        s.bits = [u64::MAX; super::WORDS];
        s.all_commands = true;
        s.future = true;
        s.first_args.clear();
        s.rules.clear();
    } else if is(op, "nocommands") || is(op, "-@all") {
        s.bits = [0; super::WORDS];
        s.all_commands = false;
        s.future = false;
        s.first_args.clear();
        s.rules.clear();
    } else if op[0] == b'~' || op[0] == b'%' {
        if s.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let (flags, pattern) = key_rule(op)?;
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match s.keys.iter_mut().find(|p| p.pattern == pattern) {
            Some(existing) => existing.flags |= flags,
            None => s.keys.push(KeyPattern {
                flags,
                pattern: pattern.to_vec(),
            }),
        }
        s.all_keys = false;
    } else if op[0] == b'&' {
        if s.all_channels {
            return Err(RuleError::ChannelAfterAll);
        }
        let pattern = &op[1..];
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        if !s.channels.iter().any(|c| c == pattern) {
            s.channels.push(pattern.to_vec());
        }
        s.all_channels = false;
    } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
        allow_command(s, &op[1..])?;
        s.keep_rule(&op[1..], true);
    } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
        let id = lookup_command(&op[1..]).ok_or(RuleError::Unknown)?;
        s.change(id, false);
        s.keep_rule(&op[1..], false);
    } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
        let name = std::str::from_utf8(&op[2..]).map_err(|_| RuleError::Unknown)?;
        let bit = category_bit(name).ok_or(RuleError::Unknown)?;
        s.change_category(bit, op[0] == b'+');
        s.keep_rule(&op[1..], op[0] == b'+');
    } else {
        return Err(RuleError::Syntax);
    }
    Ok(())
}

/// `~pattern` (read and write) or `%R~` / `%W~` / `%RW~pattern`.
fn key_rule(op: &[u8]) -> Result<(u8, &[u8]), RuleError> {
    if op[0] == b'~' {
        return Ok((READ | WRITE, &op[1..]));
    }
    let mut flags = 0;
    for (i, &c) in op.iter().enumerate().skip(1) {
        match c.to_ascii_uppercase() {
            b'R' if flags & READ == 0 => flags |= READ,
            b'W' if flags & WRITE == 0 => flags |= WRITE,
            b'~' if flags != 0 => return Ok((flags, &op[i + 1..])),
            _ => return Err(RuleError::Syntax),
        }
    }
    Err(RuleError::Syntax)
}

/// `+command`, `+container|sub`, or `+command|first-arg`.
fn allow_command(s: &mut Selector, name: &[u8]) -> Result<(), RuleError> {
    let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
        let id = lookup_command(name).ok_or(RuleError::Unknown)?;
        s.change(id, true);
        return Ok(());
    };
    let (base, sub) = (&name[..bar], &name[bar + 1..]);
    let id = lookup_command(base).ok_or(RuleError::Unknown)?;
    let info = &COMMANDS[id];
    if info.is_sub {
        return Err(RuleError::SubcommandFirstArg);
    }
    if sub.is_empty() {
        return Err(RuleError::Syntax);
    }
    if info.subs.is_empty() {
        // Redis's deprecated first-argument rule (`+select|0`).
        let firsts = s.first_args.entry(id).or_default();
        if !firsts.iter().any(|f| f.eq_ignore_ascii_case(sub)) {
            firsts.push(sub.to_vec());
        }
    } else {
        let sub_id = lookup_command(name).ok_or(RuleError::Unknown)?;
        s.change(sub_id, true);
    }
    Ok(())
}
