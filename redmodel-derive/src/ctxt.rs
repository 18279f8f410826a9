//! The error collector of one derive, as in serde_derive: the parser and
//! every rule push their errors here, and [`Ctxt::check`] reports all of
//! them at once.

use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

use proc_macro2::Span;

/// Collects the errors of one derive. [`Ctxt::check`] consumes it and
/// returns the errors; dropping it without calling `check` panics, so no
/// path through the derive can lose an error it collected.
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
    checked: bool,
}

impl Ctxt {
    /// A context with no errors yet.
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Vec::new()),
            checked: false,
        }
    }

    /// Reports `message` at `span`, the user's tokens it is about.
    pub fn error(&self, span: Span, message: impl Display) {
        self.syn_error(syn::Error::new(span, message));
    }

    /// Reports an error from parsing an attribute.
    pub fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// All the errors collected, combined into one in the order they appear
    /// in the source, or `Ok` if there are none.
    pub fn check(mut self) -> syn::Result<()> {
        self.checked = true;
        let mut errors = self.errors.take();
        // A stable sort: errors at one place keep the order of the rules.
        errors.sort_by_key(position);
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        combined.extend(errors);
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // Not while unwinding: a second panic would abort and hide the first.
        if !self.checked && !thread::panicking() {
            panic!("a derive dropped its errors without reporting them: call `Ctxt::check`");
        }
    }
}

/// Where an error starts in the source (line, column), so that the user
/// reads the errors top to bottom whichever step found them: the parser
/// (an attribute's syntax) or a rule (how attributes combine). Spans have
/// positions only inside a running macro (`Span::unwrap` converts to the
/// compiler's span, which exists only there); unit tests keep the order
/// the errors were found in.
fn position(error: &syn::Error) -> Option<(usize, usize)> {
    proc_macro::is_available().then(|| {
        let start = error.span().unwrap().start();
        (start.line(), start.column())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_combines_every_error() {
        let cx = Ctxt::new();
        cx.error(Span::call_site(), "first");
        cx.error(Span::call_site(), "second");
        let messages: Vec<String> = match cx.check() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(messages, ["first", "second"]);
    }

    #[test]
    fn check_without_errors_is_ok() {
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "without reporting them")]
    fn dropping_an_unchecked_context_panics() {
        let cx = Ctxt::new();
        cx.error(Span::call_site(), "lost");
        drop(cx);
    }
}
