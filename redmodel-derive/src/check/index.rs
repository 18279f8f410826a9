//! The rules of the index attributes (`unique`, `sorted`, `tags`,
//! `recent`) and of the handle constants they add.

use proc_macro2::Span;

use crate::ast::{Container, Field};
use crate::ctxt::Ctxt;
use crate::name::unraw;
use crate::Kind;

/// `recent = N` keeps from 1 to `u32::MAX` objects.
pub fn check_recent_cap(cx: &Ctxt, cont: &Container) {
    for field in cont.stored_fields() {
        let Some(lit) = &field.attrs.recent else {
            continue;
        };
        if field.valid_recent().is_none() {
            cx.error(
                lit.span(),
                format!(
                    "`recent` is how many objects the list keeps, from 1 to {}: write e.g. `recent = 10`",
                    u32::MAX
                ),
            );
        }
    }
}

/// Indexes are declared on admin models only.
pub fn check_indexes_on_admin(cx: &Ctxt, cont: &Container) {
    if cont.kind == Kind::Admin {
        return;
    }
    for index in cont.stored_fields().flat_map(|f| f.declared_indexes()) {
        cx.error(
            index.span,
            format!(
                "`{}` applies to fields of #[derive(Admin)] models: an index lists the objects of one model, and a sub-object lives under its admin",
                index.kind.attr_name()
            ),
        );
    }
}

/// A tags field is stored as JSON without `json`.
pub fn check_tags_not_json(cx: &Ctxt, cont: &Container) {
    for field in admin_fields(cont) {
        if let (Some(_), Some(json)) = (field.attrs.tags, field.attrs.json) {
            cx.error(
                json,
                "a `tags` field is stored as JSON already: remove `json`",
            );
        }
    }
}

/// A tags field holds several values: it is neither `unique` nor
/// `sorted`.
pub fn check_tags_alone(cx: &Ctxt, cont: &Container) {
    for field in admin_fields(cont) {
        let Some(tags) = field.attrs.tags else {
            continue;
        };
        for (name, other) in [
            ("unique", field.attrs.unique),
            ("sorted", field.attrs.sorted),
        ] {
            if other.is_some() {
                cx.error(
                    tags,
                    format!("a `tags` field holds several values, each with its own set: it cannot also be `{name}`"),
                );
            }
        }
    }
}

/// No two handle constants have one name (a field's and an index's, such
/// as field `name_unique` and the unique index on `name`): the later one
/// is reported.
pub fn check_handle_names_distinct(cx: &Ctxt, cont: &Container) {
    let mut seen: Vec<(String, String)> = Vec::new();
    for (name, what, span) in handles(cont) {
        if let Some((_, other)) = seen.iter().find(|(n, _)| *n == name) {
            cx.error(
                span,
                format!("the handle `{name}` of {what} has the same name as the handle of {other}: rename one of the fields"),
            );
        } else {
            seen.push((name, what));
        }
    }
}

/// The handle constants of the model: each stored field's, then its
/// indexes', as (name, what it is a handle of, where it was declared).
fn handles(cont: &Container) -> Vec<(String, String, Span)> {
    let mut out = Vec::new();
    for field in cont.stored_fields() {
        let handle = field.handle_name();
        let rust_name = unraw(field.ident);
        out.push((
            handle.clone(),
            format!("the field `{rust_name}`"),
            field.ident.span(),
        ));
        for index in field.indexes(cont.kind) {
            out.push((
                index.handle_name(&handle),
                format!("the `{}` index on `{rust_name}`", index.kind.attr_name()),
                index.span,
            ));
        }
    }
    out
}

/// The stored fields of an admin model, whose index attributes are checked
/// one by one; on a sub-object, each index is reported once, as misplaced.
fn admin_fields<'c, 'a>(cont: &'c Container<'a>) -> impl Iterator<Item = &'c Field<'a>> {
    cont.stored_fields()
        .filter(move |_| cont.kind == Kind::Admin)
}
