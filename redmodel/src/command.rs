//! How the crate starts a Redis command.
//!
//! `redis::cmd` starts with empty buffers, so a command of four short
//! arguments grows its byte buffer three or four times and its argument
//! list once: a few hundred instructions per argument, about a tenth of a
//! checked write's work on the client (callgrind, `bench_models`' indexed
//! insert). One allocation each, sized for the model's usual command,
//! does it at once.

use redis::Cmd;

/// Room for a key, a field or two and their values: most of the model's
/// commands (a longer one grows as before).
const ARGS: usize = 6;
const BYTES: usize = 96;

/// The command `name`, with room for its usual arguments.
pub(crate) fn cmd(name: &str) -> Cmd {
    let mut cmd = Cmd::with_capacity(ARGS, BYTES);
    cmd.arg(name);
    cmd
}
