//! CLIENT and HELLO, which read and change the state of a RESP connection
//! itself (its id, its name): a command of the engine's table cannot reach
//! that state, so the RESP server answers these two here. The table keeps
//! entries for both so that MULTI queues them as Redis does, and so that
//! an in-process client gets an error that says why it cannot run them.

use redis::Value as Reply;

use crate::args::{is, parse_i64};
use crate::command::{authenticate, subcommand_arity, unknown_subcommand};
use crate::error::CmdError;
use crate::reply;

/// What a RESP server connection knows about itself.
#[derive(Debug, Default)]
pub(crate) struct ClientInfo {
    /// The connection's id (CLIENT ID), unique in its server.
    pub(crate) id: u64,
    /// The name given by CLIENT SETNAME or HELLO SETNAME.
    pub(crate) name: Option<Vec<u8>>,
}

impl ClientInfo {
    /// Redis's `clientSetName`: printable ASCII with no spaces; empty clears.
    fn set_name(&mut self, name: &[u8]) -> Result<(), CmdError> {
        if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            return Err(CmdError::err(
                "Client names cannot contain spaces, newlines or special characters.",
            ));
        }
        self.name = (!name.is_empty()).then(|| name.to_vec());
        Ok(())
    }
}

/// CLIENT ID | GETNAME | SETNAME name, for a RESP server connection.
pub(crate) fn client_command(info: &mut ClientInfo, args: &[&[u8]]) -> Reply {
    let result = (|| {
        let [_, sub, rest @ ..] = args else {
            return Err(CmdError::err(
                "wrong number of arguments for 'client' command",
            ));
        };
        let (name, arity) = if is(sub, "id") {
            ("id", 0)
        } else if is(sub, "getname") {
            ("getname", 0)
        } else if is(sub, "setname") {
            ("setname", 1)
        } else {
            return Err(unknown_subcommand("client", sub));
        };
        if rest.len() != arity {
            return Err(subcommand_arity("client", name));
        }
        Ok(match rest {
            [new_name] => {
                info.set_name(new_name)?;
                reply::ok()
            }
            _ if name == "id" => reply::int(info.id),
            _ => info.name.clone().map_or_else(reply::nil, reply::bulk),
        })
    })();
    result.unwrap_or_else(|e| e.to_value())
}

/// HELLO [protover [AUTH username password] [SETNAME name]], for a RESP
/// server connection. Only RESP2 is spoken: `HELLO 3` gets Redis's
/// NOPROTO error, which clients take as "stay on RESP2".
pub(crate) fn hello_command(info: &mut ClientInfo, args: &[&[u8]]) -> Reply {
    let result = (|| {
        let mut options = args.get(1..).unwrap_or_default();
        if let [version, rest @ ..] = options {
            let version = parse_i64(version).ok_or_else(|| {
                CmdError::err("Protocol version is not an integer or out of range")
            })?;
            if version != 2 {
                return Err(CmdError::raw("NOPROTO unsupported protocol version"));
            }
            options = rest;
        }
        // Options apply one by one, as in Redis: a SETNAME before a bad
        // option has taken effect.
        loop {
            match options {
                [] => break,
                [opt, user, password, rest @ ..] if is(opt, "auth") => {
                    authenticate(user, password)?;
                    options = rest;
                }
                [opt, name, rest @ ..] if is(opt, "setname") => {
                    info.set_name(name)?;
                    options = rest;
                }
                [opt, ..] => {
                    return Err(CmdError::err(format!(
                        "Syntax error in HELLO option '{}'",
                        String::from_utf8_lossy(opt)
                    )))
                }
            }
        }
        let field = |name: &str, value: Reply| [reply::bulk(name), value];
        Ok(reply::array(
            [
                field("server", reply::bulk("redmodel")),
                // The Redis version whose behaviour the engine follows.
                field("version", reply::bulk("7.0.15")),
                field("proto", reply::int(2)),
                field("id", reply::int(info.id)),
                field("mode", reply::bulk("standalone")),
                field("role", reply::bulk("master")),
                field("modules", reply::array(Vec::new())),
            ]
            .into_iter()
            .flatten()
            .collect(),
        ))
    })();
    result.unwrap_or_else(|e| e.to_value())
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::{client_command, hello_command, ClientInfo};
    use crate::error::error_value;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn err(s: &str) -> Value {
        error_value(s)
    }

    #[test]
    fn client_subcommands() {
        let mut info = ClientInfo { id: 56, name: None };
        let mut run = |args: &[&[u8]]| client_command(&mut info, args);
        assert_eq!(run(&[b"CLIENT", b"ID"]), Value::Int(56));
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), Value::Nil);
        assert_eq!(run(&[b"client", b"Setname", b"abc"]), Value::Okay);
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), bulk("abc"));
        let bad_name =
            err("ERR Client names cannot contain spaces, newlines or special characters.");
        assert_eq!(run(&[b"CLIENT", b"SETNAME", b"a b"]), bad_name);
        assert_eq!(run(&[b"CLIENT", b"SETNAME", "é".as_bytes()]), bad_name);
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), bulk("abc"));
        assert_eq!(run(&[b"CLIENT", b"SETNAME", b""]), Value::Okay);
        assert_eq!(run(&[b"CLIENT", b"GETNAME"]), Value::Nil);
        assert_eq!(
            run(&[b"CLIENT"]),
            err("ERR wrong number of arguments for 'client' command")
        );
        assert_eq!(
            run(&[b"CLIENT", b"SETNAME"]),
            err("ERR wrong number of arguments for 'client|setname' command")
        );
        assert_eq!(
            run(&[b"CLIENT", b"GETNAME", b"x"]),
            err("ERR wrong number of arguments for 'client|getname' command")
        );
        assert_eq!(
            run(&[b"CLIENT", b"ID", b"x"]),
            err("ERR wrong number of arguments for 'client|id' command")
        );
        // What redis-rs sends on connect; 7.0.15 has no SETINFO either.
        assert_eq!(
            run(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"redis-rs"]),
            err("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
        );
    }

    #[test]
    fn hello_speaks_resp2_only() {
        let mut info = ClientInfo { id: 7, name: None };
        let mut run = |args: &[&[u8]]| hello_command(&mut info, args);
        let Value::Array(fields) = run(&[b"HELLO"]) else {
            panic!("HELLO did not reply with an array");
        };
        assert_eq!(fields.len(), 14);
        assert_eq!(
            fields[4..8],
            [bulk("proto"), Value::Int(2), bulk("id"), Value::Int(7)]
        );
        assert_eq!(fields[12..], [bulk("modules"), Value::Array(vec![])]);
        let noproto = err("NOPROTO unsupported protocol version");
        assert_eq!(run(&[b"HELLO", b"3"]), noproto);
        assert_eq!(run(&[b"HELLO", b"1"]), noproto);
        assert_eq!(run(&[b"HELLO", b"-1"]), noproto);
        assert_eq!(
            run(&[b"HELLO", b"3x"]),
            err("ERR Protocol version is not an integer or out of range")
        );
        assert!(matches!(
            run(&[b"HELLO", b"2", b"AUTH", b"default", b"x"]),
            Value::Array(_)
        ));
        assert_eq!(
            run(&[b"HELLO", b"2", b"AUTH", b"bob", b"x"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(
            run(&[b"HELLO", b"2", b"AUTH", b"x"]),
            err("ERR Syntax error in HELLO option 'AUTH'")
        );
        assert_eq!(
            run(&[b"HELLO", b"2", b"SETNAME", b"n", b"FOO"]),
            err("ERR Syntax error in HELLO option 'FOO'")
        );
        assert_eq!(info.name.as_deref(), Some(&b"n"[..]));
    }
}
