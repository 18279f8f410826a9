//! SAVE, BGSAVE, LASTSAVE and DEBUG RELOAD (Redis 7.0.15's `rdb.c` and
//! `debug.c`): the dataset to the RDB file and back, see [`saving`].

use super::{CmdResult, Ctx, Spec};
use crate::args::is;
use crate::error::CmdError;
mod saving;
#[cfg(test)]
mod tests;

use crate::reply;
use saving::BgsaveRefused;
pub(crate) use saving::{Reload, Saves};

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "save",
        arity: 1,
        handler: save,
    },
    Spec {
        name: "bgsave",
        arity: -1,
        handler: bgsave,
    },
    Spec {
        name: "lastsave",
        arity: 1,
        handler: lastsave,
    },
];

const BGSAVE_RUNNING: &str = "Background save already in progress";

/// SAVE: writes the RDB file now; refused while a BGSAVE runs.
fn save(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    if ctx.store.saves.bgsave_running() {
        return Err(CmdError::err(BGSAVE_RUNNING));
    }
    ctx.store.save(ctx.now).map_err(|_| CmdError::raw("ERR"))?;
    Ok(reply::ok())
}

/// `BGSAVE [SCHEDULE]`: starts writing the RDB file off the lock. With no
/// other background work to wait for (no AOF rewrite), SCHEDULE starts at
/// once too; a BGSAVE running already refuses both.
fn bgsave(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args {
        [_] => {}
        [_, opt] if is(opt, "schedule") => {}
        _ => return Err(CmdError::Syntax),
    }
    match ctx.store.bgsave(ctx.now) {
        Ok(()) => Ok(reply::simple("Background saving started")),
        Err(BgsaveRefused::Running) => Err(CmdError::err(BGSAVE_RUNNING)),
        Err(BgsaveRefused::Failed) => Err(CmdError::raw("ERR")),
    }
}

/// LASTSAVE: Unix seconds of the last successful save (the start, before
/// any).
fn lastsave(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    Ok(reply::int(ctx.store.saves.last_save()))
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`: saves the RDB file (unless
/// NOSAVE), then loads it in place of the dataset (NOFLUSH: into it,
/// where a key of the file already present is an error unless MERGE lets
/// the file's replace it). A file that fails to load changes nothing
/// (Redis has emptied the dataset by then).
pub(crate) fn debug_reload(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for opt in &args[2..] {
        if is(opt, "merge") {
            merge = true;
        } else if is(opt, "noflush") {
            flush = false;
        } else if is(opt, "nosave") {
            save = false;
        } else {
            return Err(CmdError::err(
                "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    if save && ctx.store.save(ctx.now).is_err() {
        return Err(CmdError::err("Error trying to save the DB"));
    }
    let how = match (flush, merge) {
        (true, _) => Reload::Replace,
        (false, replace) => Reload::Merge { replace },
    };
    ctx.store
        .load(ctx.now, how)
        .map_err(|_| CmdError::err("Error trying to load the RDB dump, check server logs."))?;
    Ok(reply::ok())
}
