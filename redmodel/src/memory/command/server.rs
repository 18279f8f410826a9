//! Connection and server commands: PING ECHO SELECT DBSIZE FLUSHDB FLUSHALL.

use super::{arity_error, CmdResult, Ctx, Spec};
use crate::memory::args::{int_arg, is};
use crate::memory::error::CmdError;
use crate::memory::reply;
use crate::memory::store::DATABASES;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "ping",
        arity: -1,
        handler: ping,
    },
    Spec {
        name: "echo",
        arity: 2,
        handler: echo,
    },
    Spec {
        name: "select",
        arity: 2,
        handler: select,
    },
    Spec {
        name: "dbsize",
        arity: 1,
        handler: dbsize,
    },
    Spec {
        name: "flushdb",
        arity: -1,
        handler: flushdb,
    },
    Spec {
        name: "flushall",
        arity: -1,
        handler: flushall,
    },
];

fn ping(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        1 => Ok(reply::simple("PONG")),
        2 => Ok(reply::bulk(args[1])),
        _ => Err(arity_error(args)),
    }
}

fn echo(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk(args[1]))
}

fn select(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let index = int_arg(args[1])?;
    match usize::try_from(index) {
        Ok(i) if i < DATABASES => {
            ctx.db = i;
            Ok(reply::ok())
        }
        _ => Err(CmdError::err("DB index is out of range")),
    }
}

fn dbsize(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.ks().len()))
}

/// FLUSHDB and FLUSHALL take an optional ASYNC or SYNC; both are immediate here.
fn check_flush_args(args: &[&[u8]]) -> Result<(), CmdError> {
    match args.len() {
        1 => Ok(()),
        2 if is(args[1], "async") || is(args[1], "sync") => Ok(()),
        _ => Err(CmdError::Syntax),
    }
}

fn flushdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    check_flush_args(args)?;
    ctx.ks().clear();
    Ok(reply::ok())
}

fn flushall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    check_flush_args(args)?;
    for ks in &mut ctx.store.dbs {
        ks.clear();
    }
    Ok(reply::ok())
}
