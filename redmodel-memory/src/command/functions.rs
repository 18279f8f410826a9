//! Redis Functions: FUNCTION (LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE,
//! STATS, KILL, HELP), FCALL and FCALL_RO (see [`crate::command::script::library`]).

use super::{run_subcommand, CmdResult, Ctx, HelpText, Spec, Sub};
use crate::args::{int_arg, is};
use crate::command::script::{self, library::Policy};
use crate::error::CmdError;
use crate::glob::glob_match;
use crate::reply;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "function",
        arity: -2,
        handler: function,
    },
    Spec {
        name: "fcall",
        arity: -3,
        handler: fcall,
    },
    Spec {
        name: "fcall_ro",
        arity: -3,
        handler: fcall_ro,
    },
];

fn fcall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    fcall_generic(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    fcall_generic(ctx, args, true)
}

/// `FCALL function numkeys [key ...] [arg ...]`: the function is looked
/// up first, then numkeys, as Redis does.
fn fcall_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], read_only: bool) -> CmdResult {
    if ctx.store.functions.function(args[1]).is_none() {
        return Err(CmdError::err("Function not found"));
    }
    let numkeys = int_arg(args[2]).map_err(|_| CmdError::err("Bad number of keys provided"))?;
    let (keys, argv) = super::scripting::split_keys(numkeys, &args[3..])?;
    script::fcall(ctx, args[1], keys, argv, read_only)
}

/// FUNCTION's subcommands, as the engine serves them (COMMAND describes
/// these).
pub(crate) const SUBCOMMANDS: &[Sub] = &[
    Sub {
        name: "load",
        arity: -3,
        handler: function_load,
    },
    Sub {
        name: "delete",
        arity: 3,
        handler: function_delete,
    },
    Sub {
        name: "flush",
        arity: -2,
        handler: function_flush,
    },
    Sub {
        name: "list",
        arity: -2,
        handler: function_list,
    },
    Sub {
        name: "dump",
        arity: 2,
        handler: function_dump,
    },
    Sub {
        name: "restore",
        arity: -3,
        handler: function_restore,
    },
    Sub {
        name: "stats",
        arity: 2,
        handler: function_stats,
    },
    Sub {
        name: "kill",
        arity: 2,
        handler: function_kill,
    },
    Sub {
        name: "help",
        arity: 2,
        handler: function_help,
    },
];

fn function(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run_subcommand(ctx, args, SUBCOMMANDS)
}

/// Redis's `addReplySubcommandSyntaxError`.
fn syntax_error(args: &[&[u8]]) -> CmdError {
    CmdError::err(format!(
        "unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
        String::from_utf8_lossy(args[1])
    ))
}

/// `FUNCTION LOAD [REPLACE] code`: the library's name.
fn function_load(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut replace = false;
    let mut i = 2;
    while i < args.len() - 1 {
        if is(args[i], "replace") {
            replace = true;
            i += 1;
            continue;
        }
        return Err(CmdError::err(format!(
            "Unknown option given: {}",
            String::from_utf8_lossy(args[i])
        )));
    }
    let name = ctx.store.functions.load(args[i], replace)?;
    Ok(reply::bulk(name))
}

fn function_delete(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ctx.store.functions.delete(args[2])?;
    Ok(reply::ok())
}

fn function_flush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args {
        [_, _] => {}
        [_, _, mode] if is(mode, "sync") || is(mode, "async") => {}
        [_, _, _] => {
            return Err(CmdError::err(
                "FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
        _ => return Err(syntax_error(args)),
    }
    if crate::lazyfree::flush_is_lazy(args.get(2).copied(), ctx.ks().limits()) {
        let count = ctx.store.functions.function_count();
        ctx.store.lazyfreed_objects += crate::lazyfree::flushed_functions(count, ctx.store.version);
    }
    ctx.store.functions.flush_all();
    Ok(reply::ok())
}

/// `FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]`: each option once (a
/// repeated one is an unknown argument).
fn function_list(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (mut with_code, mut pattern) = (false, None);
    let mut i = 2;
    while let Some(&opt) = args.get(i) {
        if !with_code && is(opt, "withcode") {
            with_code = true;
        } else if pattern.is_none() && is(opt, "libraryname") {
            let Some(&p) = args.get(i + 1) else {
                return Err(CmdError::err("library name argument was not given"));
            };
            pattern = Some(p);
            i += 1;
        } else {
            return Err(CmdError::err(format!(
                "Unknown argument {}",
                String::from_utf8_lossy(opt)
            )));
        }
        i += 1;
    }
    let libraries = ctx
        .store
        .functions
        .libraries()
        .filter(|l| pattern.is_none_or(|p| glob_match(p, l.name.as_bytes(), true)))
        .map(|l| {
            let functions = l
                .functions
                .iter()
                .map(|f| {
                    reply::map(vec![
                        (reply::bulk("name"), reply::bulk(f.name.as_str())),
                        (
                            reply::bulk("description"),
                            f.description.clone().map_or_else(reply::nil, reply::bulk),
                        ),
                        (
                            reply::bulk("flags"),
                            reply::set(f.flags.names().map(reply::simple).collect()),
                        ),
                    ])
                })
                .collect();
            // Maps and a set of flags, as Redis replies in RESP3.
            let mut items = vec![
                (reply::bulk("library_name"), reply::bulk(l.name.as_str())),
                (reply::bulk("engine"), reply::bulk("LUA")),
                (reply::bulk("functions"), reply::array(functions)),
            ];
            if with_code {
                items.push((reply::bulk("library_code"), reply::bulk(l.code.clone())));
            }
            reply::map(items)
        })
        .collect();
    Ok(reply::array(libraries))
}

fn function_dump(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::bulk(ctx.store.functions.dump()))
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE] (APPEND by default).
fn function_restore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let policy = match args {
        [_, _, _] => Policy::Append,
        [_, _, _, p] if is(p, "append") => Policy::Append,
        [_, _, _, p] if is(p, "replace") => Policy::Replace,
        [_, _, _, p] if is(p, "flush") => Policy::Flush,
        [_, _, _, _] => {
            return Err(CmdError::err(
                "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
        _ => return Err(syntax_error(args)),
    };
    ctx.store.functions.restore(args[2], policy)?;
    Ok(reply::ok())
}

/// FUNCTION STATS: no script is ever running while a command is served
/// (scripts hold the store's lock); the Lua engine's counts.
fn function_stats(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    let functions = &ctx.store.functions;
    Ok(reply::map(vec![
        (reply::bulk("running_script"), reply::nil()),
        (
            reply::bulk("engines"),
            reply::map(vec![(
                reply::bulk("LUA"),
                reply::map(vec![
                    (
                        reply::bulk("libraries_count"),
                        reply::int(functions.libraries().count() as i64),
                    ),
                    (
                        reply::bulk("functions_count"),
                        reply::int(functions.function_count() as i64),
                    ),
                ]),
            )]),
        ),
    ]))
}

fn function_kill(_: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Err(CmdError::raw("NOTBUSY No scripts in execution right now."))
}

fn function_help(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(FUNCTION_HELP.reply(ctx.store.version, "function"))
}

/// FUNCTION HELP, each version's.
const FUNCTION_HELP: HelpText = HelpText {
    v7_0: FUNCTION_HELP_7_0,
    v7_4: FUNCTION_HELP_7_4,
};

/// Redis 7.0.15's FUNCTION HELP.
const FUNCTION_HELP_7_0: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
];

/// Redis 7.4.1's FUNCTION HELP: 7.0's without LIST's "Library description".
const FUNCTION_HELP_7_4: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
];

#[cfg(test)]
mod tests {
    use redis::Value;

    use crate::command::test_util::*;
    use crate::Connection;

    const LIB: &str = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return redis.call('set', keys[1], args[1]) end)\nredis.register_function{function_name='ro', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}";

    fn load(c: &mut Connection, code: &str) -> Value {
        run_args(c, &["FUNCTION", "LOAD", code])
    }

    #[test]
    fn load_call_and_delete() {
        let mut c = conn();
        assert_eq!(load(&mut c, LIB), bulk("lib1"));
        assert_eq!(load(&mut c, LIB), err("ERR Library 'lib1' already exists"));
        assert_eq!(run(&mut c, "FCALL f1 1 k v"), Value::Okay);
        assert_eq!(run(&mut c, "FCALL F1 1 k w"), Value::Okay);
        assert_eq!(run(&mut c, "FCALL_RO ro 1 k"), bulk("w"));
        assert_eq!(
            run(&mut c, "FCALL_RO f1 1 k v"),
            err("ERR Can not execute a script with write flag using *_ro command.")
        );
        assert_eq!(run(&mut c, "FCALL nosuch 0"), err("ERR Function not found"));
        assert_eq!(
            run(&mut c, "FCALL f1 x"),
            err("ERR Bad number of keys provided")
        );
        assert_eq!(
            run(&mut c, "FCALL f1 2 k"),
            err("ERR Number of keys can't be greater than number of args")
        );
        // Libraries are server state.
        assert_eq!(run(&mut c, "FLUSHALL"), Value::Okay);
        assert_eq!(run(&mut c, "SCRIPT FLUSH"), Value::Okay);
        assert_eq!(run(&mut c, "FCALL_RO ro 1 k"), Value::Nil);
        assert_eq!(run(&mut c, "FUNCTION DELETE lib1"), Value::Okay);
        assert_eq!(
            run(&mut c, "FUNCTION DELETE lib1"),
            err("ERR Library not found")
        );
        assert_eq!(run(&mut c, "FCALL f1 0"), err("ERR Function not found"));
    }

    #[test]
    fn load_errors() {
        let mut c = conn();
        assert_eq!(
            load(&mut c, "return 1"),
            err("ERR Missing library metadata")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a-b\nreturn 1"),
            err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
        );
        assert_eq!(
            load(&mut c, "#!js name=a\nreturn 1"),
            err("ERR Engine 'js' not found")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a\nreturn 1"),
            err("ERR No functions registered")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a\nlocal x = math.pi"),
            err("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a\na = 1"),
            err("ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, flags={'x'}}"),
            err("ERR Error registering functions: ERR unknown flag given")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a\nfoo("),
            err("ERR Error compiling function: user_function:2: unexpected symbol near '<eof>'")
        );
        assert_eq!(
            run_args(&mut c, &["FUNCTION", "LOAD", "x", "#!lua name=a\n"]),
            err("ERR Unknown option given: x")
        );
        assert_eq!(
            load(&mut c, "#!lua name=a\nwhile true do end"),
            err("ERR Error registering functions: ERR FUNCTION LOAD timeout")
        );
    }

    #[test]
    fn replace_and_collisions() {
        let mut c = conn();
        load(&mut c, LIB);
        assert_eq!(
            load(
                &mut c,
                "#!lua name=lib2\nredis.register_function('F1', function() return 1 end)"
            ),
            err("ERR Function F1 already exists")
        );
        let code = "#!lua name=lib1\nredis.register_function('f2', function() return 2 end)";
        assert_eq!(
            run_args(&mut c, &["FUNCTION", "LOAD", "REPLACE", code]),
            bulk("lib1")
        );
        assert_eq!(run(&mut c, "FCALL f2 0"), int(2));
        assert_eq!(run(&mut c, "FCALL f1 0"), err("ERR Function not found"));
    }

    #[test]
    fn dump_and_restore() {
        let mut c = conn();
        load(&mut c, LIB);
        let Value::BulkString(payload) = run(&mut c, "FUNCTION DUMP") else {
            panic!("FUNCTION DUMP is a bulk string");
        };
        let mut restore = |policy: Option<&str>| {
            let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &payload];
            if let Some(p) = policy {
                args.push(p.as_bytes());
            }
            c.execute(&args)
        };
        assert_eq!(restore(None), err("ERR Library lib1 already exists"));
        assert_eq!(restore(Some("REPLACE")), Value::Okay);
        assert_eq!(restore(Some("FLUSH")), Value::Okay);
        assert_eq!(
            restore(Some("BAD")),
            err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
        );
        assert_eq!(run(&mut c, "FCALL_RO ro 1 k"), Value::Nil);
        assert_eq!(run(&mut c, "FUNCTION FLUSH"), Value::Okay);
        assert_eq!(
            run(&mut c, "FUNCTION RESTORE bad"),
            err("ERR DUMP payload version or checksum are wrong")
        );
    }

    /// A payload of redis-server 7.0.15 (its code LZF-compressed).
    #[test]
    fn restore_a_real_servers_payload() {
        let hex = "f5c34047406c1f23216c7561206e616d653d7a7a0a72656469732e72656769737465725f66756e0b6374696f6e28277a31272c20e0000e0a292072657475726e202761e01d00052720656e64290a00defaa20895cb81c6";
        let payload = crate::command::test_util::unhex(hex);
        let mut c = conn();
        assert_eq!(c.execute(&[b"FUNCTION", b"RESTORE", &payload]), Value::Okay);
        assert_eq!(run(&mut c, "FCALL z1 0"), bulk(&"a".repeat(39)));
    }

    #[test]
    fn list_and_stats() {
        let mut c = conn();
        load(&mut c, LIB);
        let listed = run(&mut c, "FUNCTION LIST LIBRARYNAME lib*");
        let Value::Array(libraries) = listed else {
            panic!("FUNCTION LIST is an array");
        };
        assert_eq!(libraries.len(), 1);
        assert_eq!(run(&mut c, "FUNCTION LIST LIBRARYNAME x*"), empty());
        assert_eq!(
            run(&mut c, "FUNCTION LIST WITHCODE WITHCODE"),
            err("ERR Unknown argument WITHCODE")
        );
        assert_eq!(
            run(&mut c, "FUNCTION LIST LIBRARYNAME"),
            err("ERR library name argument was not given")
        );
        assert_eq!(
            run(&mut c, "FUNCTION STATS"),
            Value::Array(vec![
                bulk("running_script"),
                Value::Nil,
                bulk("engines"),
                Value::Array(vec![
                    bulk("LUA"),
                    Value::Array(vec![
                        bulk("libraries_count"),
                        int(1),
                        bulk("functions_count"),
                        int(2),
                    ]),
                ]),
            ])
        );
        assert_eq!(
            run(&mut c, "FUNCTION KILL"),
            err("NOTBUSY No scripts in execution right now.")
        );
    }

    #[test]
    fn flush_options() {
        let mut c = conn();
        assert_eq!(run(&mut c, "FUNCTION FLUSH"), Value::Okay);
        assert_eq!(run(&mut c, "FUNCTION FLUSH async"), Value::Okay);
        assert_eq!(run(&mut c, "FUNCTION FLUSH SYNC"), Value::Okay);
        assert_eq!(
            run(&mut c, "FUNCTION FLUSH x"),
            err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
        );
        assert_eq!(
            run(&mut c, "FUNCTION FLUSH a b"),
            err("ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP.")
        );
        assert_eq!(
            run(&mut c, "FUNCTION foo"),
            err("ERR unknown subcommand 'foo'. Try FUNCTION HELP.")
        );
    }

    #[test]
    fn eval_shebang_flags() {
        let mut c = conn();
        let writes = "#!lua flags=no-writes\nreturn redis.call('set', 'x', 1)";
        assert_eq!(
            run_args(&mut c, &["EVAL", writes, "0"]),
            err(&format!(
                "ERR Write commands are not allowed from read-only scripts. script: {}, on @user_script:2.",
                crate::command::script::sha1hex(writes.as_bytes())
            ))
        );
        assert_eq!(
            run_args(&mut c, &["EVAL_RO", "#!lua\nreturn 1", "0"]),
            err("ERR Can not execute a script with write flag using *_ro command.")
        );
        assert_eq!(
            run_args(&mut c, &["EVAL", "#!lua flags=x\nreturn 1", "0"]),
            err("ERR Unexpected flag in script shebang: x")
        );
        // The shebang line keeps its number.
        let two = "#!lua\nerror('two')";
        assert_eq!(
            run_args(&mut c, &["EVAL", two, "0"]),
            err(&format!(
                "ERR user_script:2: two script: {}, on @user_script:2.",
                crate::command::script::sha1hex(two.as_bytes())
            ))
        );
    }
}
