//! Access control lists, as Redis 7.0.15 has them (`acl.c`): users with
//! passwords, the commands, keys and Pub/Sub channels each may use, and the
//! log of what was refused.
//!
//! - [`rules`] reads ACL SETUSER's rules (`on`, `>pass`, `+@read`,
//!   `~key*`, `%R~`, `&chan`, `(selector)`...) into a [`User`];
//! - [`describe`] writes a user back as rules (ACL LIST, ACL GETUSER);
//! - [`log`] keeps ACL LOG's entries.
//!
//! The users live in the store ([`Acl`]); a client names its user (none:
//! `default`). Before each command the session asks [`User::check`]; the
//! common case, the `default` user with every permission and no password,
//! is one flag ([`Acl::is_open`]) and costs nothing more.
//!
//! A command's id is its row in the command table (`command_table::table()`,
//! subcommands included), so a user's commands are a bitmap over it.

pub(crate) mod describe;
pub(crate) mod log;
pub(crate) mod rules;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use crate::args::is;
use crate::command_table::{self, Meta};
use crate::glob::glob_match;
use crate::RedisVersion;

/// Redis's categories, in its order (ACL CAT lists them so; GETUSER's
/// rules are fitted trying them in this order).
pub(crate) const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Words of a command bitmap: room for 512 command ids (Redis 7.0.15 has
/// 366 commands and subcommands; a test checks they fit).
const WORDS: usize = 8;

/// What ACL needs of one command of the table, computed once.
pub(crate) struct CmdInfo {
    /// Bits of [`CATEGORIES`].
    pub(crate) categories: u32,
    /// The ids of a container's subcommands.
    pub(crate) subs: Vec<usize>,
    /// Whether it is a subcommand (`config|get`).
    pub(crate) is_sub: bool,
    /// `no_auth` (AUTH, HELLO, QUIT, RESET): any user may run it.
    pub(crate) no_auth: bool,
}

/// The table's commands as ACL sees them, by id.
pub(crate) static COMMANDS: LazyLock<Vec<CmdInfo>> = LazyLock::new(|| {
    let table = command_table::table();
    table
        .iter()
        .map(|m| CmdInfo {
            categories: m
                .acl
                .iter()
                .filter_map(|c| category_bit(c.trim_start_matches('@')))
                .fold(0, |acc, bit| acc | bit),
            subs: m.subcommands.iter().filter_map(|s| command_id(s)).collect(),
            is_sub: m.name.contains('|'),
            no_auth: m.has_flag("no_auth"),
        })
        .collect()
});

/// The bit of a category name (any case).
pub(crate) fn category_bit(name: &str) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// The id of a command of the table by its lower-case full name.
pub(crate) fn command_id(name: &str) -> Option<usize> {
    command_table::table()
        .binary_search_by(|m| m.name.cmp(name))
        .ok()
}

/// The id of a command's description: where it sits in the table (no
/// search: the descriptions the engine hands out are the table's rows).
pub(crate) fn id_of(meta: &Meta) -> Option<usize> {
    // A description from elsewhere (a version's own row) is found by name.
    command_table::id_of(meta).or_else(|| command_id(meta.name))
}

/// Redis's `ACLLookupCommand`: `name` or `container|sub`, any case.
pub(crate) fn lookup_command(name: &[u8]) -> Option<usize> {
    let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    let mut parts = name.split('|');
    let base = parts.next()?;
    match (parts.next(), parts.next()) {
        (None, _) => command_id(base),
        (Some(sub), None) => {
            let container = command_table::meta(base)?;
            if container.subcommands.is_empty() || sub.is_empty() {
                return None;
            }
            command_id(&name)
        }
        _ => None,
    }
}

/// Read (`%R~`) and write (`%W~`) permission of a key pattern.
pub(crate) const READ: u8 = 1;
pub(crate) const WRITE: u8 = 2;

/// A key pattern and what it allows (`~` is both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyPattern {
    pub(crate) flags: u8,
    pub(crate) pattern: Vec<u8>,
}

/// A set of permissions: the user's root one, or a `(...)` selector.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selector {
    /// Redis's `SELECTOR_FLAG_ALLCOMMANDS`: set by `+@all`, cleared by
    /// taking any command away.
    pub(crate) all_commands: bool,
    /// The reserved bit of `+@all`: commands added later (modules) are
    /// allowed too. Decides whether GETUSER's rules start with `+@all`.
    pub(crate) future: bool,
    pub(crate) bits: [u64; WORDS],
    /// `+select|0`: first arguments allowed of an otherwise denied command.
    pub(crate) first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    pub(crate) all_keys: bool,
    pub(crate) keys: Vec<KeyPattern>,
    pub(crate) all_channels: bool,
    pub(crate) channels: Vec<Vec<u8>>,
    /// The command and category rules since the last `+@all` or `-@all`,
    /// in order, each kept once (Redis 7.2's `command_rules`, which its
    /// ACL LIST and GETUSER show as given: see [`Selector::keep_rule`]).
    pub(crate) rules: String,
}

impl Selector {
    /// Keeps `rule` (a command, `command|sub` or `@category`, without its
    /// sign) as allowed or denied, after the rules kept so far, taking out
    /// the earlier ones it overrides: the same rule, and the subcommands
    /// of a command (Redis's `ACLUpdateCommandRules`).
    pub(crate) fn keep_rule(&mut self, rule: &[u8], allow: bool) {
        let rule = String::from_utf8_lossy(rule).to_ascii_lowercase();
        let overridden = |kept: &str| {
            let kept = &kept[1..];
            kept == rule
                || (kept.starts_with(&rule) && kept.as_bytes().get(rule.len()) == Some(&b'|'))
        };
        let mut rules: Vec<&str> = self.rules.split(' ').filter(|r| !r.is_empty()).collect();
        rules.retain(|kept| !overridden(kept));
        let sign = if allow { "+" } else { "-" };
        self.rules = rules.join(" ");
        if !self.rules.is_empty() {
            self.rules.push(' ');
        }
        self.rules.push_str(sign);
        self.rules.push_str(&rule);
    }

    pub(crate) fn bit(&self, id: usize) -> bool {
        self.bits
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub(crate) fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(word) = self.bits.get_mut(id / 64) {
            if on {
                *word |= 1 << (id % 64);
            } else {
                *word &= !(1 << (id % 64));
                self.all_commands = false;
            }
        }
    }

    /// Redis's `ACLChangeSelectorPerm`: a command and, for a container,
    /// all its subcommands.
    pub(crate) fn change(&mut self, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.first_args.remove(&id);
        if let Some(info) = COMMANDS.get(id) {
            for &sub in &info.subs {
                self.set_bit(sub, allow);
            }
        }
    }

    /// `+@cat` / `-@cat` (the category's bit).
    pub(crate) fn change_category(&mut self, bit: u32, allow: bool) {
        for (id, info) in COMMANDS.iter().enumerate() {
            if info.categories & bit != 0 {
                self.change(id, allow);
            }
        }
    }

    /// Whether this selector has every permission (the `default` user's).
    fn is_open(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    /// Redis's `ACLSelectorCheckCmd`.
    fn check(&self, cmd: &Cmd<'_>, keys: &mut KeyCache) -> Result<(), Denied> {
        let info = &COMMANDS[cmd.id];
        if !self.all_commands && !info.no_auth && !self.bit(cmd.id) {
            let at = if info.is_sub { 2 } else { 1 };
            let allowed = cmd.argv.len() >= 2
                && self.first_args.get(&cmd.id).is_some_and(|firsts| {
                    cmd.argv
                        .get(at)
                        .is_some_and(|arg| firsts.iter().any(|f| f.eq_ignore_ascii_case(arg)))
                });
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if !self.all_keys && !cmd.meta.keys.is_empty() {
            for &(at, flags) in keys.get(cmd) {
                if !self.key_allowed(cmd.argv[at], flags) {
                    return Err(Denied::Key(at));
                }
            }
        }
        if !self.all_channels {
            for (at, pattern) in channels(cmd.meta.name, cmd.argv) {
                if !self.channel_allowed(cmd.argv[at], pattern) {
                    return Err(Denied::Channel(at));
                }
            }
        }
        Ok(())
    }

    /// Redis's `ACLSelectorCheckKey`: a pattern with at least the
    /// permissions the command needs matches the key.
    pub(crate) fn key_allowed(&self, key: &[u8], needs: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|p| p.flags & needs == needs && glob_match(&p.pattern, key, false))
    }

    /// Redis's `ACLCheckChannelAgainstList`: a channel is matched against
    /// the patterns; a pattern (PSUBSCRIBE) only literally.
    pub(crate) fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if is_pattern {
                    p == channel
                } else {
                    glob_match(p, channel, false)
                }
            })
    }
}

/// The channels a command names and whether each is a pattern, for the
/// commands Redis checks (publishing and subscribing; unsubscribing is
/// always allowed).
fn channels<'a>(name: &str, argv: &'a [&'a [u8]]) -> impl Iterator<Item = (usize, bool)> + 'a {
    let (range, pattern) = match name {
        "publish" | "spublish" => (1..2.min(argv.len()), false),
        "subscribe" | "ssubscribe" => (1..argv.len(), false),
        "psubscribe" => (1..argv.len(), true),
        _ => (0..0, false),
    };
    range.map(move |at| (at, pattern))
}

/// A user.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) name: Vec<u8>,
    /// `on`: may authenticate. New users are `off`.
    pub(crate) enabled: bool,
    /// `nopass`: any password is good.
    pub(crate) nopass: bool,
    /// `sanitize-payload` (true) or `skip-sanitize-payload` (false), if
    /// either was given.
    pub(crate) sanitize: Option<bool>,
    /// SHA-256 hex digests of the passwords, in the order they were added.
    pub(crate) passwords: Vec<String>,
    /// The root selector first, then the `(...)` ones.
    pub(crate) selectors: Vec<Selector>,
}

impl User {
    /// A new user as Redis creates one: off, no password, no permission.
    pub(crate) fn new(name: &[u8]) -> Self {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::default()],
        }
    }

    /// Redis's default user: `on nopass ~* &* +@all`.
    fn default_user() -> Self {
        let mut user = User::new(b"default");
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            // Fixed rules that parse.
            let _ = rules::apply(&mut user, rule.as_bytes());
        }
        user
    }

    fn is_open(&self) -> bool {
        self.enabled && self.nopass && self.selectors.len() == 1 && self.selectors[0].is_open()
    }

    /// Whether a selector lets the user hear `channel` (a PSUBSCRIBE
    /// pattern: named literally).
    #[cfg(feature = "server")]
    pub(crate) fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.selectors
            .iter()
            .any(|s| s.channel_allowed(channel, is_pattern))
    }

    /// Whether `password` is one of the user's (or the user needs none).
    pub(crate) fn accepts(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hashed = hash_password(password);
        // Every stored hash is compared, in time independent of where the
        // first difference is, as Redis does.
        self.passwords.iter().fold(false, |found, p| {
            let differs = p
                .bytes()
                .zip(hashed.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            found | (differs == 0 && p.len() == hashed.len())
        })
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: allowed if one selector
    /// allows; otherwise the most telling refusal (a key or channel over a
    /// command, the last argument over earlier ones).
    pub(crate) fn check(&self, meta: &'static Meta, argv: &[&[u8]]) -> Result<(), Denied> {
        let Some(id) = id_of(meta) else {
            return Ok(());
        };
        let cmd = Cmd { id, meta, argv };
        let mut keys = KeyCache::default();
        let mut worst = Denied::Command;
        for selector in &self.selectors {
            match selector.check(&cmd, &mut keys) {
                Ok(()) => return Ok(()),
                Err(denied) => {
                    if (denied.rank(), denied.at()) > (worst.rank(), worst.at()) {
                        worst = denied;
                    }
                }
            }
        }
        Err(worst)
    }
}

/// A command line being checked.
struct Cmd<'a> {
    id: usize,
    meta: &'static Meta,
    argv: &'a [&'a [u8]],
}

/// The keys of the command and the permission each needs, found once for
/// all the selectors.
#[derive(Default)]
struct KeyCache(Option<Vec<(usize, u8)>>);

impl KeyCache {
    fn get(&mut self, cmd: &Cmd<'_>) -> &[(usize, u8)] {
        self.0.get_or_insert_with(|| {
            if let Some(needs) = variable_flags(cmd.meta.name, cmd.argv) {
                return vec![(1, needs)];
            }
            if cmd.meta.name == "migrate" {
                return migrate_keys(cmd.argv);
            }
            cmd.meta
                .key_refs(cmd.argv)
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, spec)| !spec.flags.contains(&"not_key"))
                .map(|(at, spec)| {
                    let mut needs = 0;
                    for flag in spec.flags {
                        match *flag {
                            "access" => needs |= READ,
                            "insert" | "delete" | "update" => needs |= WRITE,
                            _ => {}
                        }
                    }
                    (at, needs)
                })
                .collect()
        })
    }
}

/// What the key of SET and BITFIELD needs, which depends on their options
/// (Redis's `setGetKeys` and `bitfieldGetKeys`): SET only writes unless
/// it has GET; a BITFIELD of GETs only reads.
fn variable_flags(name: &str, argv: &[&[u8]]) -> Option<u8> {
    match name {
        "set" if argv.len() >= 2 => Some(if argv.iter().skip(3).any(|a| is(a, "get")) {
            READ | WRITE
        } else {
            WRITE
        }),
        "bitfield" if argv.len() >= 2 => {
            let mut i = 2;
            let mut read_only = true;
            while i < argv.len() {
                let rest = argv.len() - i - 1;
                let arg = argv[i];
                if is(arg, "get") && rest >= 2 {
                    i += 3;
                } else if is(arg, "overflow") && rest >= 1 {
                    i += 2;
                } else {
                    read_only = false;
                    break;
                }
            }
            Some(if read_only { READ } else { READ | WRITE })
        }
        _ => None,
    }
}

/// MIGRATE's keys as Redis's `migrateGetKeys` finds them: the key at 3,
/// or (with an empty one there) those after KEYS.
fn migrate_keys(argv: &[&[u8]]) -> Vec<(usize, u8)> {
    let (mut first, mut num) = (3, 1);
    let mut i = 6;
    while i < argv.len() {
        let arg = argv[i];
        if is(arg, "keys") {
            if argv[3].is_empty() {
                first = i + 1;
                num = argv.len() - first;
            } else {
                num = 0;
            }
            break;
        }
        if is(arg, "auth") {
            i += 1;
        } else if is(arg, "auth2") {
            i += 2;
        }
        i += 1;
    }
    (first..first + num)
        .filter(|&at| at < argv.len())
        .map(|at| (at, READ | WRITE))
        .collect()
}

/// Why a command was refused, with the argument at fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    /// Redis's `ACL_DENIED_*` values, which order the refusals.
    fn rank(self) -> u8 {
        match self {
            Denied::Command => 1,
            Denied::Key(_) => 2,
            Denied::Channel(_) => 4,
        }
    }

    /// The argument at fault (0 for a command).
    pub(crate) fn at(self) -> usize {
        match self {
            Denied::Command => 0,
            Denied::Key(at) | Denied::Channel(at) => at,
        }
    }

    /// What the ACL log names as refused: the command's name, or the key
    /// or channel at fault in `argv`.
    pub(crate) fn object<'a>(self, meta: &'static Meta, argv: &[&'a [u8]]) -> &'a [u8] {
        match self {
            Denied::Command => meta.name.as_bytes(),
            other => argv.get(other.at()).copied().unwrap_or_default(),
        }
    }

    /// The error of a refused command (`processCommand`) of user `user`,
    /// as Redis `version` words it.
    pub(crate) fn error(self, fullname: &str, user: &[u8], version: RedisVersion) -> String {
        if version >= RedisVersion::V7_4 {
            return format!("NOPERM {}", self.explained(fullname, user, None));
        }
        match self {
            Denied::Command => {
                format!("NOPERM this user has no permissions to run the '{fullname}' command")
            }
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys \
                               used as arguments"
                .into(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the \
                                   channels used as arguments"
                .into(),
        }
    }

    /// The error of a script's refused command, as Redis `version` words it.
    pub(crate) fn script_error(self, fullname: &str, user: &[u8], version: RedisVersion) -> String {
        if version >= RedisVersion::V7_4 {
            return format!(
                "ERR ACL failure in script: {}",
                self.explained(fullname, user, None)
            );
        }
        let what = match self {
            Denied::Command => "can't run this command or subcommand",
            Denied::Key(_) => {
                "can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        };
        format!("ERR The user executing the script {what}")
    }

    /// ACL DRYRUN's answer for the refused command line `argv`, as Redis
    /// `version` words it.
    pub(crate) fn dry_run(
        self,
        fullname: &str,
        user: &[u8],
        argv: &[&[u8]],
        version: RedisVersion,
    ) -> String {
        let value = argv.get(self.at()).copied().unwrap_or_default();
        if version >= RedisVersion::V7_4 {
            return self.explained(fullname, user, Some(value));
        }
        let value = String::from_utf8_lossy(value);
        match self {
            Denied::Command => {
                format!("This user has no permissions to run the '{fullname}' command")
            }
            Denied::Key(_) => format!("This user has no permissions to access the '{value}' key"),
            Denied::Channel(_) => {
                format!("This user has no permissions to access the '{value}' channel")
            }
        }
    }

    /// Redis 7.2's `getAclErrorMessage`: the key or channel at fault named
    /// if `value` is given (`verbose`).
    fn explained(self, fullname: &str, user: &[u8], value: Option<&[u8]>) -> String {
        let user = String::from_utf8_lossy(user);
        let value = value.map(String::from_utf8_lossy);
        match (self, value) {
            (Denied::Command, _) => {
                format!("User {user} has no permissions to run the '{fullname}' command")
            }
            (Denied::Key(_), Some(key)) => {
                format!("User {user} has no permissions to access the '{key}' key")
            }
            (Denied::Key(_), None) => "No permissions to access a key".into(),
            (Denied::Channel(_), Some(channel)) => {
                format!("User {user} has no permissions to access the '{channel}' channel")
            }
            (Denied::Channel(_), None) => "No permissions to access a channel".into(),
        }
    }
}

/// SHA-256 of a password in lower-case hex, as Redis stores it.
pub(crate) fn hash_password(password: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(password)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Who runs the current command: set by the session before each command
/// and read back after it (AUTH changes it), so that AUTH, ACL WHOAMI and
/// scripts see their client's user without a field in every `Ctx`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Caller {
    /// The user's name; `None` for `default`.
    pub(crate) user: Option<Arc<[u8]>>,
    /// Whether the client has authenticated (or needed not to).
    pub(crate) authenticated: bool,
    /// The command runs in a transaction (ACL LOG's context `multi`).
    pub(crate) in_multi: bool,
    /// The client's id (ACL LOG's `client-info`).
    pub(crate) client_id: u64,
}

impl Caller {
    pub(crate) fn name(&self) -> &[u8] {
        self.user.as_deref().unwrap_or(b"default")
    }
}

/// The users and the log: the engine's ACL state.
#[derive(Debug)]
pub(crate) struct Acl {
    users: BTreeMap<Vec<u8>, User>,
    /// The `default` user has every permission and no password: no check
    /// is needed for its clients.
    default_open: bool,
    /// Whether the `default` user needs a password or is off: a client
    /// that has not authenticated may run only AUTH and the like.
    default_needs_auth: bool,
    pub(crate) log: log::Log,
    /// `acllog-max-len`: the entries kept.
    pub(crate) log_limit: usize,
    /// The running command's client.
    pub(crate) caller: Caller,
    /// Users deleted since the RESP server last looked: their
    /// connections are closed.
    pub(crate) deleted: Vec<Vec<u8>>,
    /// Users ACL SETUSER left without `allchannels` since the RESP server
    /// last looked: their subscribers are checked.
    pub(crate) channels_revoked: Vec<Vec<u8>>,
}

impl Default for Acl {
    fn default() -> Self {
        let mut acl = Acl {
            users: BTreeMap::new(),
            default_open: true,
            default_needs_auth: false,
            log: log::Log::default(),
            log_limit: 128,
            caller: Caller::default(),
            deleted: Vec::new(),
            channels_revoked: Vec::new(),
        };
        acl.put(User::default_user());
        acl
    }
}

impl Acl {
    /// Whether a client of `user` (`None`: default) may run anything
    /// unchecked: the fast path of every command.
    #[inline]
    pub(crate) fn is_open(&self, user: Option<&[u8]>) -> bool {
        user.is_none() && self.default_open
    }

    /// Whether a client that has not authenticated must AUTH first.
    pub(crate) fn auth_required(&self, authenticated: bool) -> bool {
        !authenticated && self.default_needs_auth
    }

    /// Whether a new connection starts authenticated (`default` is `on`
    /// and `nopass`).
    pub(crate) fn starts_authenticated(&self) -> bool {
        !self.default_needs_auth
    }

    pub(crate) fn user(&self, name: &[u8]) -> Option<&User> {
        self.users.get(name)
    }

    /// The user of a client (`None`: default).
    pub(crate) fn user_of(&self, name: Option<&[u8]>) -> Option<&User> {
        self.users.get(name.unwrap_or(b"default"))
    }

    pub(crate) fn users(&self) -> impl Iterator<Item = &User> {
        self.users.values()
    }

    /// Adds or replaces a user.
    pub(crate) fn put(&mut self, user: User) {
        if user.name == b"default" {
            self.default_open = user.is_open();
            self.default_needs_auth = !(user.nopass && user.enabled);
        }
        self.users.insert(user.name.clone(), user);
    }

    /// Removes a user (not `default`); its connections are to be closed.
    pub(crate) fn remove(&mut self, name: &[u8]) -> bool {
        if name == b"default" || self.users.remove(name).is_none() {
            return false;
        }
        self.deleted.push(name.to_vec());
        true
    }

    /// Redis's `ACLCheckUserCredentials`: the user exists, is on, and the
    /// password is one of its.
    pub(crate) fn credentials_ok(&self, user: &[u8], password: &[u8]) -> bool {
        self.users
            .get(user)
            .is_some_and(|u| u.enabled && u.accepts(password))
    }

    /// Redis's `ACLAuthenticateUser`, for the running command's client: on
    /// success the client is `user`; on failure an `auth` entry is logged.
    pub(crate) fn authenticate(
        &mut self,
        object: &[u8],
        user: &[u8],
        password: &[u8],
        now: i64,
    ) -> bool {
        if self.credentials_ok(user, password) {
            self.caller.authenticated = true;
            self.caller.user = (user != b"default").then(|| Arc::from(user));
            return true;
        }
        let context = if self.caller.in_multi {
            log::Context::Multi
        } else {
            log::Context::Toplevel
        };
        let entry = log::Entry::new(log::Reason::Auth, context, object, user, &self.caller, now);
        self.logged(entry);
        false
    }

    /// Adds `entry` to ACL LOG, kept to `acl-log-max-len` entries.
    pub(crate) fn logged(&mut self, entry: log::Entry) {
        self.log.add(entry, self.log_limit);
    }
}

/// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess` for the running
/// command's client and read access: whether one selector both allows the
/// command and reads every key (SORT's BY and GET read keys it cannot
/// name in advance).
pub(crate) fn caller_reads_every_key(acl: &Acl, argv: &[&[u8]]) -> bool {
    let name = acl.caller.user.as_deref();
    if acl.is_open(name) {
        return true;
    }
    let (Some(user), Some(meta)) = (acl.user_of(name), command_table::of_line(argv)) else {
        return true;
    };
    let Some(id) = id_of(meta) else {
        return true;
    };
    let cmd = Cmd { id, meta, argv };
    let mut keys = KeyCache::default();
    user.selectors.iter().any(|s| {
        s.check(&cmd, &mut keys).is_ok()
            && (s.all_keys
                || s.keys
                    .iter()
                    .any(|p| p.flags & READ == READ && p.pattern == b"*"))
    })
}

/// `requirepass` as Redis maps it to the default user: `resetpass`, then
/// the password, or `nopass` when empty.
pub(crate) fn set_requirepass(acl: &mut Acl, password: &[u8]) {
    let Some(mut user) = acl.user(b"default").cloned() else {
        return;
    };
    user.passwords.clear();
    user.nopass = false;
    if password.is_empty() {
        user.nopass = true;
    } else {
        user.passwords.push(hash_password(password));
    }
    acl.put(user);
}

#[cfg(test)]
mod tests;
