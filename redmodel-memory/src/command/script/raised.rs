//! The errors our Rust functions raise inside Lua: an error reply carried
//! through Lua's error machinery and read back where the script's error
//! becomes a reply.

/// An error reply raised by a library function of `redis` (the `err` of
/// the table Redis raises); the error handler turns it back into one.
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// A Lua error carrying the error reply `text`.
pub(crate) fn raise(text: &str) -> mlua::Error {
    mlua::Error::external(Raised(text.to_string()))
}

/// The error reply carried by an error a Rust function of ours raised.
pub(super) fn raised_text(e: &mlua::Error) -> Option<String> {
    match e {
        mlua::Error::CallbackError { cause, .. } => raised_text(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raised>().map(|r| r.0.clone()),
        mlua::Error::WithContext { cause, .. } => raised_text(cause),
        _ => None,
    }
}
