//! MODULE, as a Redis server without modules answers it: HELP, an empty
//! LIST, and LOAD, LOADEX and UNLOAD refused as Redis refuses them under
//! its default `enable-module-command no` (the engine loads no module).

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::error::CmdError;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[Spec {
    name: "module",
    arity: -2,
    handler: module,
}];

/// MODULE's subcommands, with Redis's arities.
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "help",
        arity: 2,
        handler: help,
    },
    Sub {
        name: "list",
        arity: 2,
        handler: list,
    },
    Sub {
        name: "load",
        arity: -3,
        handler: not_allowed,
    },
    Sub {
        name: "loadex",
        arity: -3,
        handler: not_allowed,
    },
    Sub {
        name: "unload",
        arity: 3,
        handler: not_allowed,
    },
];

fn module(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "module",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    ))
}

/// No module is loaded.
fn list(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::array(Vec::new()))
}

/// LOAD, LOADEX and UNLOAD are protected commands, refused while
/// `enable-module-command` is `no`, Redis's default.
fn not_allowed(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Err(CmdError::err(
        "MODULE command not allowed. If the enable-module-command option is set to \"local\", \
         you can run it from a local connection, otherwise you need to set this option in the \
         configuration file, and then restart the server.",
    ))
}
