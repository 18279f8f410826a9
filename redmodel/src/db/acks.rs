//! Opt-in replica acknowledgements: WAIT after every request that writes
//! ([`Db::with_replica_acks`](crate::Db::with_replica_acks)).
//!
//! Redis replicates asynchronously: a master acknowledges a write before
//! any replica has it, and a failover right after can lose it. `WAIT n t`
//! blocks its client until `n` replicas have acknowledged every write that
//! client sent before it, or `t` ms pass, and replies how many did.
//!
//! # Why WAIT rides in the request that writes
//! WAIT counts the writes of its own connection. Sent on its own, after
//! the write's reply, it could go out on a connection opened since (the
//! shared connection is re-established after an outage; a cluster's after
//! a failover), which has written nothing, so WAIT would reply at once and
//! vouch for a write it never saw. Appended to the write's own request it
//! goes out on the same connection, to the same node: on a cluster,
//! redis-rs sends a pipeline to the node of its first command with a key,
//! and WAIT has none. An atomic pipeline is sent as its commands with
//! MULTI and EXEC spelled out, WAIT after the EXEC (inside a transaction
//! WAIT would not wait).
//!
//! # Why such a request has a connection of its own
//! WAIT blocks its connection until it replies, for its whole timeout when
//! a replica is missing (after a failover, the promoted replica has none).
//! On the `Db`'s shared connection every request queued behind it would
//! wait too, so the `Db` sends a request that waits on an exclusive
//! connection from its pool, as it sends a BLPOP. On a cluster a pipeline
//! across slots goes command by command there, each write with its own
//! WAIT: one WAIT after them all would reach one node only.

use std::time::Duration;

use crate::command::cmd;
use crate::command::AddCommand as _;
use crate::error::NOT_REPLICATED;
use redis::{Arg, Cmd, Pipeline, RedisResult, Value};

/// How many replicas must acknowledge a write, and for how long to wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Acks {
    pub(crate) replicas: u32,
    pub(crate) timeout: Duration,
}

impl Acks {
    /// Whether `cmd` may write, and so must be followed by WAIT.
    pub(crate) fn wanted_for(cmd: &Cmd) -> bool {
        let mut head: [&[u8]; 2] = [b"", b""];
        let mut n = 0;
        for arg in cmd.args_iter().take(2) {
            if let Arg::Simple(a) = arg {
                head[n] = a;
                n += 1;
            }
        }
        redmodel_memory::may_write(&head[..n])
    }

    /// Whether any command of `pipeline` may write.
    pub(crate) fn wanted_for_pipeline(pipeline: &Pipeline) -> bool {
        pipeline.cmd_iter().any(Self::wanted_for)
    }

    /// `cmd` followed by WAIT, as one plain pipeline.
    pub(crate) fn wrap(self, cmd: &Cmd) -> Pipeline {
        let mut wrapped = redis::pipe();
        wrapped.add_command(cmd.clone());
        wrapped.add_command(self.wait());
        wrapped
    }

    /// The commands of `pipeline` (its MULTI and EXEC spelled out when it
    /// is atomic, so that the replies sit where redis-rs's `offset` and
    /// `count` expect them), followed by WAIT, as one plain pipeline.
    pub(crate) fn wrap_pipeline(self, pipeline: &Pipeline) -> Pipeline {
        let mut wrapped = redis::pipe();
        let atomic = pipeline.is_transaction();
        if atomic {
            wrapped.command("MULTI");
        }
        for cmd in pipeline.cmd_iter() {
            wrapped.add_command(cmd.clone());
        }
        if atomic {
            wrapped.command("EXEC");
        }
        wrapped.add_command(self.wait());
        wrapped
    }

    fn wait(self) -> Cmd {
        let mut wait = cmd("WAIT");
        let millis = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        wait.arg(self.replicas).arg(millis);
        wait
    }

    /// The replies the caller asked for (`count` of them after `offset`)
    /// out of a wrapped request's, once WAIT's reply, the last, says
    /// enough replicas acknowledged; an error with [`NOT_REPLICATED`]
    /// otherwise (the write itself was done: only its copies are missing).
    pub(crate) fn unwrap(
        self,
        mut replies: Vec<Value>,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let acked = match replies.pop() {
            Some(Value::Int(n)) => n,
            // WAIT refused (a replica, or a server that lacks it): the
            // caller must not believe the write is on any replica.
            Some(Value::ServerError(err)) => return Err(err.into()),
            other => {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::UnexpectedReturnType,
                    "WAIT replied something other than a count",
                    format!("{other:?}"),
                )))
            }
        };
        // A command refused while queueing (MOVED on a slot that moved, a
        // wrong arity) aborted the transaction: redis-rs reports that
        // refusal for an atomic pipeline, and so does this.
        if let Some(Value::ServerError(err)) = replies
            .iter()
            .take(offset)
            .find(|r| matches!(r, Value::ServerError(_)))
        {
            return Err(err.clone().into());
        }
        if acked < i64::from(self.replicas) {
            return Err(redis::make_extension_error(
                NOT_REPLICATED.to_string(),
                Some(format!(
                    "{acked} of {} replicas acknowledged the write within {} ms",
                    self.replicas,
                    self.timeout.as_millis()
                )),
            ));
        }
        Ok(replies.into_iter().skip(offset).take(count).collect())
    }

    /// The reply of the one command a [`wrap`](Self::wrap)ped request
    /// carried, once WAIT's says enough replicas acknowledged it.
    pub(crate) fn unwrap_one(self, replies: Vec<Value>) -> RedisResult<Value> {
        Ok(self.unwrap(replies, 0, 1)?.pop().unwrap_or(Value::Nil))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::not_replicated;

    #[test]
    fn only_writes_are_followed_by_wait() {
        assert!(Acks::wanted_for(cmd("HSET").arg("k").arg("f").arg(1)));
        assert!(Acks::wanted_for(cmd("evalsha").arg("ab").arg(0)));
        assert!(!Acks::wanted_for(cmd("HGETALL").arg("k")));
        assert!(!Acks::wanted_for(cmd("CONFIG").arg("GET").arg("x")));
        let mut reads = redis::pipe();
        reads
            .atomic()
            .command("GET")
            .arg("a")
            .command("EXISTS")
            .arg("b");
        assert!(!Acks::wanted_for_pipeline(&reads));
        reads.command("DEL").arg("a");
        assert!(Acks::wanted_for_pipeline(&reads));
    }

    #[test]
    fn an_atomic_pipeline_is_spelled_out_with_wait_last() {
        let acks = Acks {
            replicas: 2,
            timeout: Duration::from_millis(250),
        };
        let mut pipe = redis::pipe();
        pipe.atomic()
            .command("SET")
            .arg("a")
            .arg(1)
            .command("INCR")
            .arg("b");
        let wrapped = acks.wrap_pipeline(&pipe);
        assert!(!wrapped.is_transaction());
        let names: Vec<Vec<u8>> = wrapped
            .cmd_iter()
            .map(|c| match c.args_iter().next() {
                Some(Arg::Simple(n)) => n.to_vec(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(names, [&b"MULTI"[..], b"SET", b"INCR", b"EXEC", b"WAIT"]);
    }

    #[test]
    fn too_few_acknowledgements_are_an_error_that_carries_the_counts() {
        let acks = Acks {
            replicas: 2,
            timeout: Duration::from_millis(100),
        };
        let ok = acks.unwrap(vec![Value::Okay, Value::Int(2)], 0, 1);
        assert_eq!(ok.ok(), Some(vec![Value::Okay]));
        let err = acks
            .unwrap(vec![Value::Okay, Value::Int(1)], 0, 1)
            .err()
            .map(|e| not_replicated(&e));
        assert_eq!(err, Some(Some((1, 2))));
    }
}
