//! How the crate starts a Redis command.
//!
//! `redis::cmd` starts with empty buffers, so a command of four short
//! arguments grows its byte buffer three or four times and its argument
//! list once: a few hundred instructions per argument, about a tenth of a
//! checked write's work on the client (callgrind, `bench_models`' indexed
//! insert). One allocation each, sized for the model's usual command,
//! does it at once.

use redis::{Arg, Cmd, Pipeline};

/// Room for a key, a field or two and their values: most of the model's
/// commands (a longer one grows as before).
const ARGS: usize = 6;
const BYTES: usize = 96;

/// The command `name`, with room for its usual arguments.
pub(crate) fn cmd(name: &str) -> Cmd {
    sized(name, ARGS, BYTES)
}

/// The command `name`, with room for `args` more arguments of `bytes`
/// bytes in all: a command whose size the caller knows never grows.
pub(crate) fn sized(name: &str, args: usize, bytes: usize) -> Cmd {
    let mut cmd = Cmd::with_capacity(1 + args, name.len() + bytes);
    cmd.arg(name);
    cmd
}

/// The command `name` with `args`, its buffers sized to them: for the
/// commands a bulk write holds by the thousand until they are sent, where
/// spare room spreads them over more memory.
pub(crate) fn exact(name: &str, args: &[&[u8]]) -> Cmd {
    let mut cmd = sized(name, args.len(), args.iter().map(|a| a.len()).sum());
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// Takes a command built in one expression out of its builder:
/// `cmd("GET").arg(key).owned()`, where `.clone()` would copy both of its
/// buffers and drop the originals.
pub(crate) trait Owned {
    /// The command, leaving an empty one in its place.
    fn owned(&mut self) -> Cmd;
}

impl Owned for Cmd {
    fn owned(&mut self) -> Cmd {
        std::mem::take(self)
    }
}

/// `Pipeline::cmd` with [`cmd`]'s room for arguments: `pipe.command("HSET")`.
pub(crate) trait AddCommand {
    /// Adds the command `name` (then `.arg(...)` as with `Pipeline::cmd`).
    fn command(&mut self, name: &str) -> &mut Self;

    /// Adds `cmds`, their replies dropped: commands built apart, such as
    /// an index's.
    fn ignored(&mut self, cmds: impl IntoIterator<Item = Cmd>) -> &mut Self;
}

impl AddCommand for Pipeline {
    fn command(&mut self, name: &str) -> &mut Pipeline {
        self.add_command(cmd(name))
    }

    fn ignored(&mut self, cmds: impl IntoIterator<Item = Cmd>) -> &mut Pipeline {
        for c in cmds {
            self.add_command(c).ignore();
        }
        self
    }
}

/// The arguments of `cmd`, name first, each as its bytes; `None` for one
/// that is not plain bytes (the cursor of redis-rs's scan iterators, which
/// no command of the crate's holds).
pub(crate) fn args(cmd: &Cmd) -> impl Iterator<Item = Option<&[u8]>> + Clone {
    cmd.args_iter().map(|a| match a {
        Arg::Simple(bytes) => Some(bytes),
        _ => None,
    })
}

/// Whether `a` and `b` are the same command, argument by argument.
pub(crate) fn same(a: &Cmd, b: &Cmd) -> bool {
    args(a).eq(args(b))
}

/// The name of `cmd` (its first argument), as sent.
pub(crate) fn name(cmd: &Cmd) -> Option<&[u8]> {
    args(cmd).next().flatten()
}

/// Whether `cmd` is the command `name` (in any case).
pub(crate) fn is(cmd: &Cmd, name: &str) -> bool {
    self::name(cmd).is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
}
