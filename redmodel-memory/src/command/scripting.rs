//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (see [`crate::command::script`]).

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::args::{int_arg, is};
use crate::command::script::{self, Source};
use crate::error::CmdError;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "eval",
        arity: -3,
        handler: eval,
    },
    Spec {
        name: "evalsha",
        arity: -3,
        handler: evalsha,
    },
    Spec {
        name: "eval_ro",
        arity: -3,
        handler: eval_ro,
    },
    Spec {
        name: "evalsha_ro",
        arity: -3,
        handler: evalsha_ro,
    },
    Spec {
        name: "script",
        arity: -2,
        handler: script_command,
    },
];

fn eval(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

fn evalsha(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

/// `EVAL script numkeys [key ...] [arg ...]`: numkeys is checked first,
/// with Redis's texts, then the script is found or compiled and run.
fn eval_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], by_sha: bool, read_only: bool) -> CmdResult {
    let (keys, argv) = split_keys(int_arg(args[2])?, &args[3..])?;
    let source = if by_sha {
        Source::Sha(args[1])
    } else {
        Source::Body(args[1])
    };
    script::eval(ctx, source, keys, argv, read_only)
}

/// A script call's keys, then its other arguments.
pub(super) type KeysAndArgs<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

/// EVAL's and FCALL's `numkeys key... arg...`: the keys and the
/// arguments, with Redis's errors for a count out of range.
pub(super) fn split_keys<'a>(
    numkeys: i64,
    rest: &'a [&'a [u8]],
) -> Result<KeysAndArgs<'a>, CmdError> {
    if numkeys > rest.len() as i64 {
        return Err(CmdError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let Ok(numkeys) = usize::try_from(numkeys) else {
        return Err(CmdError::err("Number of keys can't be negative"));
    };
    Ok(rest.split_at(numkeys))
}

/// SCRIPT's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "load",
        arity: 3,
        handler: script_load,
    },
    Sub {
        name: "exists",
        arity: -3,
        handler: script_exists,
    },
    Sub {
        name: "flush",
        arity: -2,
        handler: script_flush,
    },
    Sub {
        name: "kill",
        arity: 2,
        handler: script_kill,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: script_help,
    },
];

fn script_command(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

fn script_load(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (sha, _, _) = ctx.store.scripts.load(args[2])?;
    Ok(reply::bulk(sha))
}

fn script_exists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let scripts = &ctx.store.scripts;
    Ok(reply::array(
        args[2..]
            .iter()
            .map(|sha| reply::int(i64::from(scripts.exists(sha))))
            .collect(),
    ))
}

fn script_flush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mode_ok = match args.len() {
        2 => true,
        3 => is(args[2], "sync") || is(args[2], "async"),
        _ => false,
    };
    if !mode_ok {
        return Err(CmdError::err("SCRIPT FLUSH only support SYNC|ASYNC option"));
    }
    if crate::lazyfree::flush_is_lazy(args.get(2).copied(), ctx.ks().limits()) {
        ctx.store.lazyfreed_objects += crate::lazyfree::flushed_scripts(ctx.store.scripts.count());
    }
    ctx.store.scripts.flush();
    Ok(reply::ok())
}

/// No script can be running while a client is served: scripts hold the
/// store's lock from start to end.
fn script_kill(_ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    Err(CmdError::raw("NOTBUSY No scripts in execution right now."))
}

fn script_help(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "script",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    ))
}
