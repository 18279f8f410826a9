//! ACL LOG: the refused commands, keys, channels and logins, newest first.
//! Like Redis, a refusal like one of the last ten within a minute (same
//! reason, context, object and user) bumps that entry's count and moves it
//! to the front instead of adding one.

use std::collections::VecDeque;

use redis::Value as Reply;

use super::{Caller, Denied};
use crate::reply;
use crate::RedisVersion;

/// Redis's `ACL_LOG_GROUPING_MAX_TIME_DELTA`, in ms.
const GROUPING_MS: i64 = 60_000;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub(crate) fn of(denied: Denied) -> Self {
        match denied {
            Denied::Command => Reason::Command,
            Denied::Key(_) => Reason::Key,
            Denied::Channel(_) => Reason::Channel,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    count: u64,
    reason: Reason,
    context: Context,
    /// The command's full name, the key or channel, or `AUTH`.
    object: Vec<u8>,
    username: Vec<u8>,
    /// Unix ms of the last refusal counted.
    ctime: i64,
    client_info: String,
    /// Redis 7.2's `entry-id` (which new entry of the log's life it is)
    /// and `timestamp-created` (the first refusal's Unix ms).
    id: u64,
    created: i64,
}

impl Entry {
    pub(crate) fn new(
        reason: Reason,
        context: Context,
        object: &[u8],
        username: &[u8],
        caller: &Caller,
        now: i64,
    ) -> Self {
        Entry {
            count: 1,
            reason,
            context,
            object: object.to_vec(),
            username: username.to_vec(),
            ctime: now,
            // A RESP connection's line is its CLIENT LIST line, which the
            // server fills in after the command (see `Log::fill`).
            client_info: if caller.client_id == 0 {
                client_info(caller)
            } else {
                String::new()
            },
            id: 0,
            created: now,
        }
    }

    /// The entry with `caller`'s own `client-info` now, for an entry
    /// logged away from its client's connection (a blocked command
    /// refused when another client's write serves it), which no later
    /// command of that connection fills in.
    pub(crate) fn described_now(mut self, caller: &Caller) -> Self {
        if self.client_info.is_empty() {
            self.client_info = client_info(caller);
        }
        self
    }

    fn same_as(&self, other: &Entry) -> bool {
        self.reason == other.reason
            && self.context == other.context
            && (self.ctime - other.ctime).abs() <= GROUPING_MS
            && self.object == other.object
            && self.username == other.username
    }

    /// ACL LOG's map of the entry, in Redis's order: 7 fields, and from
    /// Redis 7.2 on (`ids`) its id and when it was made and last counted.
    fn reply(&self, now: i64, ids: bool) -> Reply {
        let field = |name: &str, value: Reply| (reply::bulk(name), value);
        let mut fields = vec![
            field("count", reply::int(self.count)),
            field("reason", reply::bulk(self.reason.name())),
            field("context", reply::bulk(self.context.name())),
            field("object", reply::bulk(self.object.clone())),
            field("username", reply::bulk(self.username.clone())),
            field(
                "age-seconds",
                reply::double((now - self.ctime) as f64 / 1000.0),
            ),
            field("client-info", reply::bulk(self.client_info.clone())),
        ];
        if ids {
            fields.extend([
                field("entry-id", reply::int(self.id)),
                field("timestamp-created", reply::int(self.created)),
                field("timestamp-last-updated", reply::int(self.ctime)),
            ]);
        }
        reply::map(fields)
    }
}

/// What the engine knows of an in-process client for `client-info`:
/// CLIENT LIST's fields, those it does not track as Redis's defaults.
fn client_info(caller: &Caller) -> String {
    format!(
        "id={} addr= laddr= fd=-1 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 \
         qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 \
         events=r cmd=NULL user={} redir=-1 resp=2",
        caller.client_id,
        String::from_utf8_lossy(caller.name())
    )
}

/// The entries, newest first.
#[derive(Debug, Default)]
pub(crate) struct Log {
    entries: VecDeque<Entry>,
    /// The entries made so far (the next one's `entry-id`): ACL LOG RESET
    /// keeps counting, as Redis does.
    made: u64,
    /// Refusals by reason (Redis 7.2's INFO `acl_access_denied_*`), since
    /// the start or CONFIG RESETSTAT.
    denied: Denials,
}

/// Refusals counted by reason.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Denials {
    pub(crate) auth: u64,
    pub(crate) command: u64,
    pub(crate) key: u64,
    pub(crate) channel: u64,
}

impl Log {
    /// Adds an entry, or counts it in a like one of the last ten.
    pub(crate) fn add(&mut self, mut entry: Entry, limit: usize) {
        let counter = match entry.reason {
            Reason::Auth => &mut self.denied.auth,
            Reason::Command => &mut self.denied.command,
            Reason::Key => &mut self.denied.key,
            Reason::Channel => &mut self.denied.channel,
        };
        *counter += 1;
        if limit == 0 {
            self.entries.clear();
            return;
        }
        let like = self.entries.iter().take(10).position(|e| e.same_as(&entry));
        if let Some(at) = like {
            if let Some(mut found) = self.entries.remove(at) {
                found.count += 1;
                found.ctime = entry.ctime;
                found.client_info = entry.client_info;
                self.entries.push_front(found);
            }
            return;
        }
        entry.id = self.made;
        self.made += 1;
        self.entries.push_front(entry);
        self.entries.truncate(limit);
    }

    /// The refusals counted by reason.
    pub(crate) fn denials(&self) -> Denials {
        self.denied
    }

    /// CONFIG RESETSTAT: the refusals counted afresh.
    pub(crate) fn reset_stats(&mut self) {
        self.denied = Denials::default();
    }

    /// Whether an entry waits for its connection's CLIENT LIST line.
    #[cfg(feature = "server")]
    pub(crate) fn unfilled(&self) -> bool {
        self.entries
            .iter()
            .take(10)
            .any(|e| e.client_info.is_empty())
    }

    /// Gives the entries that wait for one the connection's line.
    #[cfg(feature = "server")]
    pub(crate) fn fill(&mut self, line: &str) {
        for entry in self.entries.iter_mut().take(10) {
            if entry.client_info.is_empty() {
                entry.client_info = line.to_string();
            }
        }
    }

    /// ACL LOG RESET.
    pub(crate) fn reset(&mut self) {
        self.entries.clear();
    }

    /// `ACL LOG [count]`: the newest `count` entries, as Redis `version`
    /// shows them.
    pub(crate) fn reply(&self, count: usize, now: i64, version: RedisVersion) -> Reply {
        let ids = version >= RedisVersion::V7_4;
        reply::array(
            self.entries
                .iter()
                .take(count)
                .map(|e| e.reply(now, ids))
                .collect(),
        )
    }
}
