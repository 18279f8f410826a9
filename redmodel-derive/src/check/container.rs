//! The rules of the struct, whatever the derive.

use syn::spanned::Spanned;

use crate::ast::Container;
use crate::ctxt::Ctxt;
use crate::name::{is_valid_table, suggest_table};
use crate::Kind;

/// A model is a concrete struct.
pub fn check_not_generic(cx: &Ctxt, cont: &Container) {
    let generics = &cont.input.generics;
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        cx.error(
            generics.span(),
            format!(
                "#[derive({})] does not support generic structs: declare a concrete struct for each model",
                cont.kind.derive_name()
            ),
        );
    }
}

/// A table name is a valid key part.
pub fn check_table_name(cx: &Ctxt, cont: &Container) {
    let Some(lit) = &cont.attrs.table else { return };
    let table = lit.value();
    if !is_valid_table(&table) {
        cx.error(
            lit.span(),
            format!(
                "invalid table name {table:?}: a table name is made of ASCII letters, digits, `_`, `-` and `.`, and does not start with `_` (`:` separates key parts); write e.g. `table = \"{}\"`",
                suggest_table(&table, cont.ident())
            ),
        );
    }
}

/// A slot group's name is a valid key part with no `:`, so that a stored
/// key's tag tells a group (`{shop}`) from an admin (`{teacher:A}`).
pub fn check_slot_group_name(cx: &Ctxt, cont: &Container) {
    let Some(lit) = &cont.attrs.slot_group else {
        return;
    };
    let group = lit.value();
    if !is_valid_table(&group) {
        cx.error(
            lit.span(),
            format!(
                "invalid slot group {group:?}: a slot group is named like a table, with ASCII letters, digits, `_`, `-` and `.`, not starting with `_` (no `:`, `{{` or `}}`: the layout writes the braces); write e.g. `slot_group = \"{}\"`",
                suggest_table(group.trim_matches(['{', '}']), cont.ident())
            ),
        );
    }
}

/// Each struct attribute fits the kind of model it is written on.
pub fn check_attrs_fit_kind(cx: &Ctxt, cont: &Container) {
    for (name, span) in cont.attrs.written() {
        if let Some(instead) = misfit(name, cont.kind) {
            cx.error(
                span,
                format!(
                    "`{name}` does not apply to #[derive({})]: {instead}",
                    cont.kind.derive_name()
                ),
            );
        }
    }
}

/// What to write instead of struct attribute `name` on a model of `kind`,
/// or `None` if it applies.
fn misfit(name: &str, kind: Kind) -> Option<&'static str> {
    Some(match (kind, name) {
        (Kind::Relation, "sync_every") => "a relation is a list, it has no write count; remove it",
        (Kind::Relation, "single") => "a relation is a list of member keys; remove it",
        (Kind::Relation, "slot_group") => {
            "a relation's lists are under their owner's keys, in the owner's slot group: write `slot_group` on the owner model"
        }
        (Kind::SubObject, "slot_group") => {
            "a sub-object's keys are under its admin's, in the admin's slot group: write `slot_group` on the admin model"
        }
        (Kind::Relation, "ttl") => {
            "a relation list gets a TTL from its handle's `expire`, or with its admin's `expire_tree`; remove it"
        }
        (Kind::Admin | Kind::SubObject, "member" | "inverse") => {
            "`member` and `inverse` declare a relation: use `#[derive(Relation)]` on a unit struct"
        }
        (Kind::Admin | Kind::SubObject, "on_delete") => {
            "`on_delete` goes on a relation (`#[derive(Relation)]`) or on a reference field (`Ref<Model>`)"
        }
        (Kind::Admin, "owner") => {
            "an admin model stands alone; for a model stored under an admin, use `#[derive(SubObject)]` with `#[redmodel(owner = ...)]`"
        }
        (Kind::Admin, "single") => {
            "an admin object is a hash; only a sub-object can be a single value (`#[derive(SubObject)]`)"
        }
        _ => return None,
    })
}
