//! The shapes of attribute values (a flag, a string, a model type, a
//! number, an `on_delete` action, a `default`), each parsed with an error
//! that shows the expected form.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{ExprPath, LitInt, LitStr, Path, Token};

use super::{Action, DefaultAttr, Flag, OnDelete};

/// Where the attribute's name was written.
pub trait PathSpan {
    fn path_span(&self) -> Span;
}

impl PathSpan for ParseNestedMeta<'_> {
    fn path_span(&self) -> Span {
        self.path.span()
    }
}

fn name_of(meta: &ParseNestedMeta) -> String {
    let path = &meta.path;
    path.get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string().replace(' ', ""))
}

/// Whether the attribute is one of `names`.
pub fn is_one_of(meta: &ParseNestedMeta, names: &[&str]) -> bool {
    names.iter().any(|n| meta.path.is_ident(n))
}

/// An attribute of the other place: `what` is `field` or `struct`.
pub fn misplaced(meta: &ParseNestedMeta, what: &str, place: &str) -> syn::Error {
    meta.error(format!(
        "`{}` is a {what} attribute: put it {place}",
        name_of(meta)
    ))
}

/// An attribute of no place, with the names `expected` here.
pub fn unknown(meta: &ParseNestedMeta, expected: &[&str]) -> syn::Error {
    let list = expected
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    meta.error(format!(
        "unknown redmodel attribute `{}`; expected one of {list}",
        name_of(meta)
    ))
}

fn duplicate(meta: &ParseNestedMeta) -> syn::Error {
    meta.error(format!(
        "duplicate `{}` attribute: give it once",
        name_of(meta)
    ))
}

/// Stores an attribute's value, given once.
pub fn set<T>(meta: &ParseNestedMeta, slot: &mut Option<T>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(duplicate(meta));
    }
    *slot = Some(value);
    Ok(())
}

/// Parses a flag: no value allowed.
pub fn flag(meta: &ParseNestedMeta, slot: &mut Flag) -> syn::Result<()> {
    if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        let name = name_of(meta);
        return Err(meta.error(format!(
            "`{name}` takes no value: write `#[redmodel({name})]`"
        )));
    }
    set(meta, slot, meta.path_span())
}

/// The value after `=`, or an error showing the expected form.
fn value<'a>(meta: &'a ParseNestedMeta, example: &str) -> syn::Result<ParseStream<'a>> {
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("write `{example}`")));
    }
    meta.value()
}

/// A string literal.
pub fn string(meta: &ParseNestedMeta, example: &str) -> syn::Result<LitStr> {
    let input = value(meta, example)?;
    input
        .parse::<LitStr>()
        .map_err(|e| syn::Error::new(e.span(), format!("expected a string: write `{example}`")))
}

/// An integer literal, `what` saying what it counts.
pub fn int(meta: &ParseNestedMeta, example: &str, what: &str) -> syn::Result<LitInt> {
    let input = value(meta, example)?;
    input
        .parse::<LitInt>()
        .map_err(|e| syn::Error::new(e.span(), format!("expected {what}: write `{example}`")))
}

/// A model's type (`owner = Student`), not a string.
pub fn model_path(meta: &ParseNestedMeta, example: &str) -> syn::Result<Path> {
    let input = value(meta, example)?;
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Err(syn::Error::new(
            lit.span(),
            format!("write the model's type, not a string: `{example}`"),
        ));
    }
    input.parse::<Path>().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!("expected a model type: write `{example}`"),
        )
    })
}

/// Parses `on_delete = "restrict" | "clear" | "delete" | "cascade"`;
/// which action fits which place is a rule of [`crate::check`].
pub fn on_delete(meta: &ParseNestedMeta) -> syn::Result<OnDelete> {
    let lit = string(meta, "on_delete = \"restrict\"")?;
    let action = match lit.value().as_str() {
        "restrict" => Action::Restrict,
        "clear" => Action::Clear,
        "delete" => Action::Delete,
        "cascade" => Action::Cascade,
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!("unknown on_delete action `{other}`: write `on_delete = \"restrict\"`, `\"clear\"` or `\"delete\"` on a reference field, `\"cascade\"` or `\"restrict\"` on a relation"),
            ))
        }
    };
    Ok(OnDelete {
        action,
        span: meta.path_span(),
        value_span: lit.span(),
    })
}

/// Parses `default` or `default = "path::to::function"`.
pub fn default(meta: &ParseNestedMeta) -> syn::Result<DefaultAttr> {
    if !meta.input.peek(Token![=]) {
        return Ok(DefaultAttr::Trait(meta.path_span()));
    }
    let lit: LitStr = meta.value()?.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "write `default` or `default = \"path::to::function\"`",
        )
    })?;
    lit.parse::<ExprPath>()
        .map(DefaultAttr::Function)
        .map_err(|_| {
            syn::Error::new(
                lit.span(),
                "expected the path of a function: `default = \"path::to::function\"`",
            )
        })
}
