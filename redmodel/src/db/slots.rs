//! Which master serves each slot, as `CLUSTER SLOTS` said: how a batch of
//! commands in many slots (a batch read of many objects) is cut into one
//! pipeline per master instead of one request per command.
//!
//! redis-rs routes a pipeline to one node and refuses one whose keys span
//! slots; sent as its commands, each routed on its own, a batch of 100
//! reads cost a hundred requests through the cluster connection's task
//! (about 0.55x one server's rate for `load_many`). The map here only
//! groups: each group is still routed by redis-rs, by its first command's
//! slot, so a stale map costs a command a redirection (`MOVED`, answered
//! by sending it on its own), never a wrong reply.

use redis::Value;

/// The number of hash slots of a Redis Cluster.
const SLOTS: usize = 16384;

/// For each slot, the index of the master that serves it (`u16::MAX`:
/// none does).
pub(crate) struct SlotOwners(Box<[u16]>);

impl SlotOwners {
    /// The map in a `CLUSTER SLOTS` reply: `[start, end, [host, port,
    /// id...], replicas...]` per range. `None` for a reply of another
    /// shape.
    pub(crate) fn from_reply(reply: &Value) -> Option<SlotOwners> {
        let Value::Array(ranges) = reply else {
            return None;
        };
        let mut owners = vec![u16::MAX; SLOTS].into_boxed_slice();
        let mut masters: Vec<&[Value]> = Vec::new();
        for range in ranges {
            let Value::Array(range) = range else {
                return None;
            };
            let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
                (range.first(), range.get(1), range.get(2))
            else {
                return None;
            };
            // A master is known by its address: host and port.
            let address = master.get(..2)?;
            let index = match masters.iter().position(|m| *m == address) {
                Some(i) => i,
                None => {
                    masters.push(address);
                    masters.len() - 1
                }
            };
            let (start, end) = (usize::try_from(*start).ok()?, usize::try_from(*end).ok()?);
            for owner in owners.get_mut(start..=end)? {
                *owner = u16::try_from(index).ok()?;
            }
        }
        Some(SlotOwners(owners))
    }

    /// The master that serves `slot`, if the map names one.
    pub(crate) fn owner(&self, slot: u16) -> Option<u16> {
        self.0
            .get(usize::from(slot))
            .copied()
            .filter(|o| *o != u16::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
        ])
    }

    fn range(start: i64, end: i64, master: Value) -> Value {
        Value::Array(vec![Value::Int(start), Value::Int(end), master])
    }

    #[test]
    fn each_slot_names_its_master() {
        let reply = Value::Array(vec![
            range(0, 5460, node("10.0.0.1", 7000)),
            range(5461, 10922, node("10.0.0.2", 7000)),
            range(10923, 16383, node("10.0.0.1", 7001)),
            // A second range of the first master.
            range(100, 100, node("10.0.0.1", 7000)),
        ]);
        let owners = SlotOwners::from_reply(&reply).expect("a map");
        assert_eq!(owners.owner(0), owners.owner(5460));
        assert_ne!(owners.owner(5460), owners.owner(5461));
        assert_ne!(owners.owner(0), owners.owner(16383));
        assert_eq!(owners.owner(100), owners.owner(0));
        assert!(owners.owner(16383).is_some());
    }

    #[test]
    fn a_slot_no_master_serves_has_none() {
        let reply = Value::Array(vec![range(0, 10, node("h", 1))]);
        let owners = SlotOwners::from_reply(&reply).expect("a map");
        assert!(owners.owner(10).is_some());
        assert_eq!(owners.owner(11), None);
    }

    #[test]
    fn another_shape_is_no_map() {
        assert!(SlotOwners::from_reply(&Value::Nil).is_none());
        let bad = Value::Array(vec![Value::Array(vec![Value::Int(0)])]);
        assert!(SlotOwners::from_reply(&bad).is_none());
        let out_of_range = Value::Array(vec![range(0, 20000, node("h", 1))]);
        assert!(SlotOwners::from_reply(&out_of_range).is_none());
    }
}
