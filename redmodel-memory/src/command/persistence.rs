//! SAVE, BGSAVE, LASTSAVE and DEBUG RELOAD (Redis 7.0.15's `rdb.c` and
//! `debug.c`): the dataset to the RDB file and back, see [`saving`]; and
//! BGREWRITEAOF and DEBUG LOADAOF, the AOF's (see `crate::aof`).

use super::{CmdResult, Ctx, Spec};
use crate::args::is;
use crate::error::CmdError;
mod aof;
mod own_dir;
mod saving;
#[cfg(test)]
mod tests;

use crate::reply;
pub use own_dir::remove_ended_dirs;
pub(crate) use own_dir::OwnDir;
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
        name: "bgrewriteaof",
        arity: 1,
        handler: bgrewriteaof,
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

/// `BGSAVE [SCHEDULE]`: starts writing the RDB file off the lock; a
/// BGSAVE running already refuses both forms, an AOF rewrite the plain
/// one (the engine's writes need no fork, so SCHEDULE starts at once).
fn bgsave(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let schedule = match args {
        [_] => false,
        [_, opt] if is(opt, "schedule") => true,
        _ => return Err(CmdError::Syntax),
    };
    if !schedule && ctx.store.aof.rewriting() && !ctx.store.saves.bgsave_running() {
        return Err(CmdError::err(
            "Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
        ));
    }
    match ctx.store.bgsave(ctx.now) {
        Ok(()) => Ok(reply::simple("Background saving started")),
        Err(BgsaveRefused::Running) => Err(CmdError::err(BGSAVE_RUNNING)),
        Err(BgsaveRefused::Failed) => Err(CmdError::raw("ERR")),
    }
}

/// BGREWRITEAOF: starts a rewrite of the AOF off the lock, or schedules
/// it behind a running BGSAVE.
fn bgrewriteaof(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    match ctx.store.bgrewriteaof(ctx.now) {
        Ok(crate::aof::RewriteStart::Started) => Ok(reply::simple(
            "Background append only file rewriting started",
        )),
        Ok(crate::aof::RewriteStart::Scheduled) => Ok(reply::simple(
            "Background append only file rewriting scheduled",
        )),
        Err(e) => Err(CmdError::err(e)),
    }
}

/// DEBUG LOADAOF: the dataset replaced by what the AOF files hold (the
/// AOF synced first if it is on). A file that fails to load changes
/// nothing (Redis exits then).
pub(crate) fn debug_loadaof(ctx: &mut Ctx<'_>, _: &[&[u8]]) -> CmdResult {
    ctx.store
        .debug_loadaof(ctx.now)
        .map_err(|e| CmdError::err(format!("Error loading the AOF: {e}")))?;
    Ok(reply::ok())
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
