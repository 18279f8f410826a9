//! The rules of `#[derive(Relation)]`.

use syn::spanned::Spanned;
use syn::Data;

use crate::ast::Container;
use crate::attr::Action;
use crate::ctxt::Ctxt;

/// A relation's data is its list of member keys: it is a unit struct.
pub fn check_unit_struct(cx: &Ctxt, cont: &Container) {
    let ident = cont.ident();
    match &cont.input.data {
        Data::Struct(data) if data.fields.is_empty() => {}
        Data::Struct(data) => cx.error(
            data.fields.span(),
            format!(
                "a relation has no fields (its data is the list of member keys): declare it as a unit struct, `struct {ident};`"
            ),
        ),
        _ => cx.error(
            ident.span(),
            format!("#[derive(Relation)] needs a unit struct: `struct {ident};`"),
        ),
    }
}

/// A relation names its owner and member models.
pub fn check_models(cx: &Ctxt, cont: &Container) {
    let span = cont.ident().span();
    if cont.attrs.owner.is_none() {
        cx.error(
            span,
            "a relation needs its owner and member models: add `#[redmodel(owner = Teacher, member = Class)]`",
        );
    } else if cont.attrs.member.is_none() {
        cx.error(
            span,
            "a relation needs its member model: add `member = Class` to `#[redmodel(...)]`",
        );
    }
}

/// A relation's `on_delete` is `cascade` (the member is removed from the
/// lists) or `restrict`: `clear` and `delete` are for reference fields.
pub fn check_on_delete(cx: &Ctxt, cont: &Container) {
    if let Some(on_delete) = cont.attrs.on_delete {
        if matches!(on_delete.action, Action::Clear | Action::Delete) {
            cx.error(
                on_delete.value_span,
                "a relation's `on_delete` is `\"cascade\"` (the default: the delete removes the member from the lists) or `\"restrict\"`; `clear` and `delete` go on reference fields",
            );
        }
    }
}
