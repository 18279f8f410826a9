//! The rules of the struct of `#[derive(Admin)]` and
//! `#[derive(SubObject)]`.

use syn::spanned::Spanned;
use syn::{Data, Fields};

use crate::ast::Container;
use crate::ctxt::Ctxt;
use crate::Kind;

/// A sub-object names the admin model it is stored under.
pub fn check_sub_object_owner(cx: &Ctxt, cont: &Container) {
    if cont.kind == Kind::SubObject && cont.attrs.owner.is_none() {
        cx.error(
            cont.ident().span(),
            "a sub-object needs the admin model it belongs to: add `#[redmodel(owner = Student)]`",
        );
    }
}

/// `sync_every` is a number of writes, at least 1.
pub fn check_sync_every(cx: &Ctxt, cont: &Container) {
    let Some(lit) = &cont.attrs.sync_every else {
        return;
    };
    if cont.valid_sync_every().is_none() {
        cx.error(
            lit.span(),
            "`sync_every` is a number of writes, at least 1: write e.g. `sync_every = 10`",
        );
    }
}

/// The model's `ttl` is a positive duration.
pub fn check_ttl(cx: &Ctxt, cont: &Container) {
    let Some(lit) = &cont.attrs.ttl else {
        return;
    };
    if let Err(message) = crate::duration::parse_millis(&lit.value()) {
        cx.error(lit.span(), message);
    }
}

/// The model is a struct with named fields.
pub fn check_named_fields(cx: &Ctxt, cont: &Container) {
    let ident = cont.ident();
    let derive = cont.kind.derive_name();
    let example = format!("`struct {ident} {{ #[redmodel(pk)] id: String, ... }}`");
    match &cont.input.data {
        Data::Struct(data) if matches!(data.fields, Fields::Named(_)) => {}
        Data::Struct(data) => cx.error(
            data.fields.span(),
            format!("#[derive({derive})] needs named fields: {example}"),
        ),
        _ => cx.error(
            ident.span(),
            format!("#[derive({derive})] needs a struct with named fields: {example}"),
        ),
    }
}

/// One field is marked `pk`.
pub fn check_pk_present(cx: &Ctxt, cont: &Container) {
    if cont.fields.is_some() && cont.pk_fields().next().is_none() {
        cx.error(
            cont.ident().span(),
            format!(
                "#[derive({})] needs a pk: mark the field that identifies an object with `#[redmodel(pk)]` (a String, an integer, or a type implementing `redmodel::model::KeyPart`)",
                cont.kind.derive_name()
            ),
        );
    }
}

/// Only one field is marked `pk`: the others are reported.
pub fn check_one_pk(cx: &Ctxt, cont: &Container) {
    for field in cont.pk_fields().skip(1) {
        if let Some(span) = field.attrs.pk {
            cx.error(
                span,
                "only one field can be the pk: remove `#[redmodel(pk)]` here (for a pk made of several parts, use one field of a type implementing `redmodel::model::KeyPart`)",
            );
        }
    }
}

/// A `single` sub-object stores exactly one field.
pub fn check_single_value(cx: &Ctxt, cont: &Container) {
    let (Some(span), Some(_)) = (cont.attrs.single, &cont.fields) else {
        return;
    };
    let stored = cont.stored_fields().count();
    if stored != 1 {
        cx.error(
            span,
            format!(
                "a `single` sub-object stores exactly one value besides its pk, but `{}` has {stored} stored fields: keep one field, or remove `single` to store a hash",
                cont.ident()
            ),
        );
    }
}
