//! ACL and AUTH: users, their permissions and logging in (see
//! [`crate::acl`] for the model), with Redis 7.0.15's replies and errors.

use super::{help_reply, run_subcommand, CmdResult, Ctx, Spec, Sub};
use crate::acl::{self, describe, rules};
use crate::args::{is, parse_i64};
use crate::command_table;
use crate::error::CmdError;
use crate::reply;

pub(crate) const COMMANDS: &[Spec] = &[Spec {
    name: "acl",
    arity: -2,
    handler: acl_command,
}];

pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "cat",
        arity: -2,
        handler: cat,
    },
    Sub {
        name: "deluser",
        arity: -3,
        handler: deluser,
    },
    Sub {
        name: "dryrun",
        arity: -4,
        handler: dryrun,
    },
    Sub {
        name: "genpass",
        arity: -2,
        handler: genpass,
    },
    Sub {
        name: "getuser",
        arity: 3,
        handler: getuser,
    },
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
        arity: 2,
        handler: load_or_save,
    },
    Sub {
        name: "log",
        arity: -2,
        handler: log,
    },
    Sub {
        name: "save",
        arity: 2,
        handler: load_or_save,
    },
    Sub {
        name: "setuser",
        arity: -3,
        handler: setuser,
    },
    Sub {
        name: "users",
        arity: 2,
        handler: users,
    },
    Sub {
        name: "whoami",
        arity: 2,
        handler: whoami,
    },
];

fn acl_command(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// Redis's `addReplySubcommandSyntaxError`, for the argument counts the
/// table's arity lets through but the subcommand refuses.
fn syntax_error(args: &[&[u8]]) -> CmdError {
    CmdError::err(format!(
        "unknown subcommand or wrong number of arguments for '{}'. Try ACL HELP.",
        String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
    ))
}

fn setuser(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let name = args[2];
    if rules::has_spaces(name) {
        return Err(CmdError::err(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let all_channels = ctx.store.config.get("acl-pubsub-default") == "allchannels";
    let acl = &mut ctx.store.acl;
    let existed = acl.user(name).is_some();
    let user = rules::set_user(acl.user(name), name, &args[3..], all_channels)
        // `addReplyErrorSdsSafe`: no newline may break the error line.
        .map_err(|e| CmdError::err(e.replace(['\r', '\n'], " ")))?;
    // Subscribers of the user may have lost a channel they listen to.
    if existed && !user.selectors.iter().any(|s| s.all_channels) {
        acl.channels_revoked.push(name.to_vec());
    }
    acl.put(user);
    Ok(reply::ok())
}

fn deluser(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args[2..].iter().any(|name| *name == b"default") {
        return Err(CmdError::err("The 'default' user cannot be removed"));
    }
    let acl = &mut ctx.store.acl;
    let deleted = args[2..].iter().filter(|name| acl.remove(name)).count();
    Ok(reply::int(deleted))
}

fn getuser(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let version = ctx.store.version;
    Ok(ctx
        .store
        .acl
        .user(args[2])
        .map_or_else(reply::nil, |u| describe::getuser(u, version)))
}

fn list(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let version = ctx.store.version;
    Ok(reply::array(
        ctx.store
            .acl
            .users()
            .map(|u| {
                let mut line = b"user ".to_vec();
                line.extend_from_slice(&u.name);
                line.push(b' ');
                line.extend_from_slice(describe::user_line(u, version).as_bytes());
                reply::bulk(line)
            })
            .collect(),
    ))
}

fn users(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::array(
        ctx.store
            .acl
            .users()
            .map(|u| reply::bulk(u.name.clone()))
            .collect(),
    ))
}

fn whoami(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk(ctx.store.acl.caller.name()))
}

fn load_or_save(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Err(CmdError::err(
        "This Redis instance is not configured to use an ACL file. You may want to specify \
         users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have \
         a Redis configuration file set) in order to store users in the Redis configuration.",
    ))
}

fn cat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let version = ctx.store.version;
    match args {
        [_, _] => Ok(reply::array(
            acl::CATEGORIES.iter().map(|c| reply::bulk(*c)).collect(),
        )),
        [_, _, category] => {
            let bit = std::str::from_utf8(category)
                .ok()
                .and_then(acl::category_bit)
                .ok_or_else(|| {
                    CmdError::err(format!(
                        "Unknown category '{}'",
                        String::from_utf8_lossy(&category[..category.len().min(128)])
                    ))
                })?;
            Ok(reply::array(
                command_table::table()
                    .iter()
                    .zip(acl::COMMANDS.iter())
                    .filter(|(m, info)| {
                        info.categories & bit != 0 && command_table::serves(m, version)
                    })
                    .map(|(m, _)| reply::bulk(m.name))
                    .collect(),
            ))
        }
        _ => Err(syntax_error(args)),
    }
}

fn genpass(_: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    const MAX_BITS: i64 = 4096;
    let bits = match args {
        [_, _] => 256,
        [_, _, bits] => parse_i64(bits).ok_or(CmdError::NotInteger)?,
        _ => return Err(syntax_error(args)),
    };
    if bits <= 0 || bits > MAX_BITS {
        return Err(CmdError::err(format!(
            "ACL GENPASS argument must be the number of bits for the output password, a \
             positive number up to {MAX_BITS}"
        )));
    }
    let chars = (bits + 3) / 4;
    let pass: String = (0..chars)
        .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
        .collect();
    Ok(reply::bulk(pass))
}

fn log(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let count = match args {
        [_, _] => 10,
        [_, _, arg] if is(arg, "reset") => {
            ctx.store.acl.log.reset();
            return Ok(reply::ok());
        }
        [_, _, arg] => parse_i64(arg).ok_or(CmdError::NotInteger)?.max(0),
        _ => return Err(syntax_error(args)),
    };
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    Ok(ctx.store.acl.log.reply(count, ctx.now, ctx.store.version))
}

fn dryrun(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let name = args[2];
    let Some(user) = ctx.store.acl.user(name) else {
        return Err(CmdError::err(format!(
            "User '{}' not found",
            String::from_utf8_lossy(name)
        )));
    };
    let line = &args[3..];
    let version = ctx.store.version;
    let Some(cmd) = command_table::of_line(line).filter(|m| command_table::serves(m, version))
    else {
        return Err(CmdError::err(format!(
            "Command '{}' not found",
            String::from_utf8_lossy(line[0])
        )));
    };
    if !super::arity_ok(cmd.arity, line.len()) {
        return Err(CmdError::err(format!(
            "wrong number of arguments for '{}' command",
            cmd.name
        )));
    }
    Ok(match user.check(cmd, line) {
        Ok(()) => reply::ok(),
        Err(denied) => reply::bulk(denied.dry_run(cmd.name, name, line, version)),
    })
}

fn help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(help_reply(
        ctx.store.version,
        "acl",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    ))
}

/// The error of a failed login (AUTH, HELLO AUTH).
pub(crate) const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// `AUTH [username] password`.
pub(crate) fn auth(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (user, password): (&[u8], &[u8]) = match args {
        [_, password] => {
            let nopass = ctx.store.acl.user(b"default").is_some_and(|u| u.nopass);
            if nopass {
                return Err(CmdError::err(
                    "AUTH <password> called without any password configured for the default \
                     user. Are you sure your configuration is correct?",
                ));
            }
            (b"default", password)
        }
        [_, user, password] => (user, password),
        _ => return Err(CmdError::Syntax),
    };
    if ctx.store.acl.authenticate(args[0], user, password, ctx.now) {
        Ok(reply::ok())
    } else {
        Err(CmdError::raw(WRONGPASS))
    }
}
