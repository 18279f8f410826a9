//! The one serde attribute the derive reads: `#[serde(default)]` and
//! `#[serde(default = "f")]` mean the same as redmodel's `default`.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Token};

use super::DefaultAttr;

/// The `default` of a field's `#[serde(...)]` attributes. Other serde
/// attributes are serde's business: anything unreadable is left to serde
/// to report.
pub fn default(attrs: &[Attribute]) -> Option<DefaultAttr> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                found = super::value::default(&meta).ok();
                Ok(())
            } else {
                skip_meta(meta)
            }
        });
    }
    found
}

/// Consumes one serde attribute we do not read (`a`, `a = x`, `a(...)`).
fn skip_meta(meta: ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(skip_meta)?;
    }
    Ok(())
}
