//! A user written back as rules, as Redis 7.0.15 writes it (ACL LIST's
//! lines, ACL GETUSER's fields).
//!
//! The command rules are Redis's approximation: start from `+@all` (if the
//! user may run future commands) or `-@all`, then apply, one at a time,
//! the category that best fits what is left to explain, and finish with
//! single commands. Redis walks its commands in its hash table's order;
//! the engine walks them in name order (containers before their
//! subcommands), so the single-command tail of a rule line may list the
//! same commands in another order.

use redis::Value as Reply;

use super::rules::apply_selector;
use super::{KeyPattern, Selector, User, CATEGORIES, COMMANDS, READ, WRITE};
use crate::command_table;
use crate::reply;
use crate::RedisVersion;

/// The user's payload flag as Redis `version` shows it: from Redis 7.2
/// on every user starts with `sanitize-payload`, which no rule takes off
/// but `skip-sanitize-payload`, so a user that set neither has it.
fn sanitize(user: &User, version: RedisVersion) -> Option<bool> {
    user.sanitize
        .or((version >= RedisVersion::V7_4).then_some(true))
}

/// ACL LIST's description of a user (after `user NAME `).
pub(crate) fn user_line(user: &User, version: RedisVersion) -> String {
    let mut out = String::new();
    out.push_str(if user.enabled { "on " } else { "off " });
    if user.nopass {
        out.push_str("nopass ");
    }
    match sanitize(user, version) {
        Some(false) => out.push_str("skip-sanitize-payload "),
        Some(true) => out.push_str("sanitize-payload "),
        None => {}
    }
    for hash in &user.passwords {
        out.push('#');
        out.push_str(hash);
        out.push(' ');
    }
    for (i, selector) in user.selectors.iter().enumerate() {
        let text = selector_line(selector, version);
        if i == 0 {
            out.push_str(&text);
        } else {
            out.push_str(" (");
            out.push_str(&text);
            out.push(')');
        }
    }
    out
}

/// Redis's `ACLDescribeSelector`: keys, channels, then commands.
fn selector_line(s: &Selector, version: RedisVersion) -> String {
    let mut out = String::new();
    if s.all_keys {
        out.push_str("~* ");
    } else {
        for pattern in &s.keys {
            out.push_str(&key_pattern(pattern));
            out.push(' ');
        }
    }
    if s.all_channels {
        out.push_str("&* ");
    } else {
        out.push_str("resetchannels ");
        for channel in &s.channels {
            out.push('&');
            out.push_str(&String::from_utf8_lossy(channel));
            out.push(' ');
        }
    }
    out.push_str(&command_rules(s, version));
    out
}

fn key_pattern(p: &KeyPattern) -> String {
    let prefix = match p.flags {
        f if f == READ | WRITE => "~",
        READ => "%R~",
        _ => "%W~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
}

/// Redis's `ACLDescribeSelectorCommandRules`: from Redis 7.2 on, `+@all`
/// or `-@all` and the rules kept since, as given ([`Selector::rules`]);
/// before, the shortest description of the commands allowed, by
/// categories then commands, naming only the commands Redis `version` has.
pub(crate) fn command_rules(s: &Selector, version: RedisVersion) -> String {
    if version >= RedisVersion::V7_4 {
        let start = if s.future { "+@all" } else { "-@all" };
        return match s.rules.is_empty() {
            true => start.to_string(),
            false => format!("{start} {}", s.rules),
        };
    }
    let mut rules = String::new();
    let additive = !s.future;
    let mut fake = Selector::default();
    let start = if additive { "-@all" } else { "+@all" };
    rules.push_str(start);
    rules.push(' ');
    // Fixed rules that parse.
    let _ = apply_selector(&mut fake, start.as_bytes());

    // What is left to explain: the user's bits, with each category
    // applied so far undone.
    let mut temp = Selector {
        bits: s.bits,
        ..Selector::default()
    };
    let mut applied = [false; CATEGORIES.len()];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (u64::MAX, 0u64);
        for (j, _) in applied.iter().enumerate().filter(|(_, done)| !**done) {
            let (on, off) = count_category(&temp, 1 << j);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some(j);
                min_diff = diff;
                max_same = same;
            }
        }
        let Some(j) = best else {
            break;
        };
        fake.change_category(1 << j, additive);
        temp.change_category(1 << j, !additive);
        rules.push_str(if additive { "+@" } else { "-@" });
        rules.push_str(CATEGORIES[j]);
        rules.push(' ');
        applied[j] = true;
    }

    // The single commands that still differ.
    let table = command_table::table();
    for (id, m) in table.iter().enumerate() {
        if !command_table::serves(m, version) {
            continue;
        }
        let user_bit = s.bit(id);
        if user_bit != fake.bit(id) {
            rules.push(if user_bit { '+' } else { '-' });
            rules.push_str(m.name);
            rules.push(' ');
            fake.change(id, user_bit);
        }
        if !user_bit {
            if let Some(firsts) = s.first_args.get(&id) {
                for first in firsts {
                    rules.push('+');
                    rules.push_str(m.name);
                    rules.push('|');
                    rules.push_str(&String::from_utf8_lossy(first));
                    rules.push(' ');
                }
            }
        }
    }
    rules.pop();
    rules
}

/// How many commands of a category the selector allows and denies.
fn count_category(s: &Selector, bit: u32) -> (u64, u64) {
    let (mut on, mut off) = (0, 0);
    for (id, info) in COMMANDS.iter().enumerate() {
        if info.categories & bit != 0 {
            if s.bit(id) {
                on += 1;
            } else {
                off += 1;
            }
        }
    }
    (on, off)
}

/// ACL GETUSER's fields of a selector: commands, keys, channels.
fn selector_fields(s: &Selector, version: RedisVersion) -> Vec<(Reply, Reply)> {
    let keys = if s.all_keys {
        "~*".to_string()
    } else {
        s.keys.iter().map(key_pattern).collect::<Vec<_>>().join(" ")
    };
    let channels = if s.all_channels {
        "&*".to_string()
    } else {
        s.channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    vec![
        (
            reply::bulk("commands"),
            reply::bulk(command_rules(s, version)),
        ),
        (reply::bulk("keys"), reply::bulk(keys)),
        (reply::bulk("channels"), reply::bulk(channels)),
    ]
}

/// ACL GETUSER's reply.
pub(crate) fn getuser(user: &User, version: RedisVersion) -> Reply {
    let mut flags = vec![reply::bulk(if user.enabled { "on" } else { "off" })];
    if user.nopass {
        flags.push(reply::bulk("nopass"));
    }
    match sanitize(user, version) {
        Some(false) => flags.push(reply::bulk("skip-sanitize-payload")),
        Some(true) => flags.push(reply::bulk("sanitize-payload")),
        None => {}
    }
    let mut fields = vec![
        (reply::bulk("flags"), reply::set(flags)),
        (
            reply::bulk("passwords"),
            reply::array(
                user.passwords
                    .iter()
                    .map(|p| reply::bulk(p.as_str()))
                    .collect(),
            ),
        ),
    ];
    fields.extend(selector_fields(&user.selectors[0], version));
    fields.push((
        reply::bulk("selectors"),
        reply::array(
            user.selectors[1..]
                .iter()
                .map(|s| reply::map(selector_fields(s, version)))
                .collect(),
        ),
    ));
    reply::map(fields)
}
