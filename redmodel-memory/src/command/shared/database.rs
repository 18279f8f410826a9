//! A database number argument, shared by SELECT (`connection`) and by
//! MOVE, COPY and SWAPDB (`databases`).

use crate::args::int32_arg;
use crate::command::DATABASES;
use crate::error::CmdError;

/// A database number argument: an `int`, then an existing database.
pub(crate) fn db_index(arg: &[u8]) -> Result<usize, CmdError> {
    let n = int32_arg(arg, None)?;
    usize::try_from(n)
        .ok()
        .filter(|&i| i < DATABASES)
        .ok_or_else(|| CmdError::err("DB index is out of range"))
}
