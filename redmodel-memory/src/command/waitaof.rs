//! WAITAOF numlocal numreplicas timeout (Redis 7.4): how many local AOF
//! fsyncs and replicas acknowledged this client's writes. The engine has
//! no replicas, and writes a client's changes to the AOF before it
//! answers: the local count is 1 with `appendonly yes` and refused
//! without it, as Redis refuses it; asked for replicas, it waits for the
//! timeout (forever for 0), as Redis waits for replicas it does not have,
//! then answers none.

use super::{CmdResult, Ctx, Spec};
use crate::args::parse_i64;
use crate::command::blocking::{block_until_timeout, deadline_base, parse_timeout_ms};
use crate::error::CmdError;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "waitaof",
    arity: 4,
    handler: waitaof,
}];

fn waitaof(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let local = parse_i64(args[1]).ok_or(CmdError::NotInteger)?;
    if !(0..=1).contains(&local) {
        return Err(CmdError::err(
            "value is out of range, value must between 0 and 1",
        ));
    }
    let replicas = parse_i64(args[2]).ok_or(CmdError::NotInteger)?;
    if replicas < 0 {
        return Err(CmdError::err("value is out of range, must be positive"));
    }
    let timeout = parse_timeout_ms(args[3], deadline_base(ctx))?;
    let aof = ctx.store.config.get("appendonly") == "yes";
    if local > 0 && !aof {
        return Err(CmdError::err(
            "WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    let acked = reply::array(vec![reply::int(i64::from(aof)), reply::int(0)]);
    if replicas == 0 {
        return Ok(acked);
    }
    block_until_timeout(ctx, timeout, acked)
}

#[cfg(test)]
mod tests {
    use crate::command::test_util::{clocked, clocked_74, err, ints, run};

    /// Against redis-server 7.4.1 (no AOF, no replica).
    #[test]
    fn waitaof_answers_as_redis_7_4() {
        let (_, mut c) = clocked_74(0);
        assert_eq!(run(&mut c, "WAITAOF 0 0 0"), ints(&[0, 0]));
        let cases = [
            (
                "WAITAOF 1 0 0",
                "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
            ),
            (
                "WAITAOF x 0 0",
                "ERR value is not an integer or out of range",
            ),
            (
                "WAITAOF -1 0 0",
                "ERR value is out of range, value must between 0 and 1",
            ),
            (
                "WAITAOF 0 -1 0",
                "ERR value is out of range, must be positive",
            ),
            ("WAITAOF 0 0 -1", "ERR timeout is negative"),
            (
                "WAITAOF 0 0",
                "ERR wrong number of arguments for 'waitaof' command",
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(run(&mut c, line), err(expected), "{line}");
        }
        let (_, mut c70) = clocked(0);
        assert_eq!(
            run(&mut c70, "WAITAOF 0 0 0"),
            err("ERR unknown command 'WAITAOF', with args beginning with: '0' '0' '0' ")
        );
    }

    #[test]
    fn client_no_touch_and_setinfo_answer_as_redis_7_4() {
        let (_, mut c) = clocked_74(0);
        let ok = redis::Value::Okay;
        assert_eq!(run(&mut c, "CLIENT NO-TOUCH on"), ok);
        assert_eq!(run(&mut c, "CLIENT NO-TOUCH OFF"), ok);
        assert_eq!(run(&mut c, "CLIENT NO-TOUCH x"), err("ERR syntax error"));
        assert_eq!(
            run(&mut c, "CLIENT NO-TOUCH"),
            err("ERR wrong number of arguments for 'client|no-touch' command")
        );
        assert_eq!(run(&mut c, "CLIENT SETINFO lib-name redis-py"), ok);
        assert_eq!(run(&mut c, "CLIENT SETINFO LIB-VER 1.0"), ok);
        assert_eq!(run(&mut c, "CLIENT SETINFO lib-ver "), ok);
        assert_eq!(
            run(&mut c, "CLIENT SETINFO foo x"),
            err("ERR Unrecognized option 'foo'")
        );
        assert_eq!(
            run(&mut c, "CLIENT SETINFO lib-name a b"),
            err("ERR wrong number of arguments for 'client|setinfo' command")
        );
        assert_eq!(
            c.execute(&[b"CLIENT", b"SETINFO", b"lib-name", b"x y"]),
            err("ERR lib-name cannot contain spaces, newlines or special characters.")
        );
    }
}
