//! COMMAND INFO's entry of a command: its description in the command
//! table, as a reply.

use redis::Value as Reply;

use crate::command_table::{self, Begin, Find, KeySpec, Meta};
use crate::reply;
use crate::RedisVersion;

impl Meta {
    /// COMMAND INFO's entry: name, arity, flags, first key, last key, step,
    /// ACL categories, tips, key specs, subcommands (those of Redis's the
    /// engine serves).
    pub(crate) fn info(&self, version: RedisVersion) -> Reply {
        reply::array(vec![
            reply::bulk(self.name),
            reply::int(self.arity),
            reply::set(self.flags.iter().map(|f| status(f)).collect()),
            reply::int(self.first),
            reply::int(self.last),
            reply::int(self.step),
            reply::set(self.acl.iter().map(|c| status(c)).collect()),
            reply::set(self.tips.iter().map(|t| reply::bulk(*t)).collect()),
            reply::set(self.keys.iter().map(KeySpec::info).collect()),
            reply::set(
                self.subcommands
                    .iter()
                    .filter(|name| crate::command::serves_subcommand(name, version))
                    .filter_map(|name| command_table::meta(name))
                    .map(|meta| command_table::as_of(meta, version).info(version))
                    .collect(),
            ),
        ])
    }
}

impl KeySpec {
    pub(crate) fn info(&self) -> Reply {
        let mut items = Vec::new();
        if !self.notes.is_empty() {
            items.push((reply::bulk("notes"), reply::bulk(self.notes)));
        }
        items.push((
            reply::bulk("flags"),
            reply::set(self.flags.iter().map(|f| status(f)).collect()),
        ));
        let begin = match self.begin {
            Begin::Index(i) => search("index", vec![("index", reply::int(i))]),
            Begin::Keyword(word, from) => search(
                "keyword",
                vec![
                    ("keyword", reply::bulk(word)),
                    ("startfrom", reply::int(from)),
                ],
            ),
            Begin::Unknown => search("unknown", Vec::new()),
        };
        items.push((reply::bulk("begin_search"), begin));
        let find = match self.find {
            Find::Range { last, step, limit } => search(
                "range",
                vec![
                    ("lastkey", reply::int(last)),
                    ("keystep", reply::int(step)),
                    ("limit", reply::int(limit)),
                ],
            ),
            Find::Keynum { index, first, step } => search(
                "keynum",
                vec![
                    ("keynumidx", reply::int(index)),
                    ("firstkey", reply::int(first)),
                    ("keystep", reply::int(step)),
                ],
            ),
            Find::Unknown => search("unknown", Vec::new()),
        };
        items.push((reply::bulk("find_keys"), find));
        reply::map(items)
    }
}

/// `{type: kind, spec: {name: value, ...}}`.
fn search(kind: &str, spec: Vec<(&str, Reply)>) -> Reply {
    let spec = spec
        .into_iter()
        .map(|(name, value)| (reply::bulk(name), value))
        .collect();
    reply::map(vec![
        (reply::bulk("type"), reply::bulk(kind)),
        (reply::bulk("spec"), reply::map(spec)),
    ])
}

fn status(text: &str) -> Reply {
    Reply::SimpleString(text.to_string())
}
