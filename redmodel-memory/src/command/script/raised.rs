//! The errors our Rust functions raise inside Lua: an error reply carried
//! through Lua's error machinery and read back where the script's error
//! becomes a reply.

/// The field of an error table whose error INFO errorstats counted
/// where it arose (Redis's own name for it).
pub(super) const COUNTED: &str = "ignore_error_stats_update";

/// An error reply raised by a library function of `redis` (the `err` of
/// the table Redis raises); the error handler turns it back into one.
#[derive(Debug)]
struct Raised {
    text: String,
    /// Already counted in INFO errorstats where it arose (a command's
    /// error that `redis.call` raises): the script's error reply made of
    /// it is not counted again, as Redis's `ignore_error_stats_update`.
    counted: bool,
}

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Raised {}

/// A Lua error carrying the error reply `text`.
pub(crate) fn raise(text: &str) -> mlua::Error {
    mlua::Error::external(Raised {
        text: text.to_string(),
        counted: false,
    })
}

/// [`raise`] of an error reply already counted in INFO errorstats.
pub(super) fn raise_counted(text: &str) -> mlua::Error {
    mlua::Error::external(Raised {
        text: text.to_string(),
        counted: true,
    })
}

/// The error reply carried by an error a Rust function of ours raised.
pub(super) fn raised_text(e: &mlua::Error) -> Option<String> {
    raised(e).map(|r| r.text.clone())
}

/// Whether `e` carries an error reply already counted in INFO errorstats.
pub(super) fn raised_counted(e: &mlua::Error) -> bool {
    raised(e).is_some_and(|r| r.counted)
}

fn raised(e: &mlua::Error) -> Option<&Raised> {
    match e {
        mlua::Error::CallbackError { cause, .. } => raised(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raised>(),
        mlua::Error::WithContext { cause, .. } => raised(cause),
        _ => None,
    }
}
