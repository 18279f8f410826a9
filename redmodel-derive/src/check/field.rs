//! The rules of the fields of `#[derive(Admin)]` and
//! `#[derive(SubObject)]`: the pk, skipped fields, stored names,
//! references.

use crate::ast::{reference, Container};
use crate::attr::Action;
use crate::ctxt::Ctxt;

/// The hash fields the runtime keeps in every object, with what they hold.
const RESERVED: &[(&str, &str)] = &[
    ("_count", "the write count"),
    ("_refs", "the mark reference writes leave on their target"),
];

/// The pk is stored in the key: no storage attribute applies to it.
pub fn check_pk_not_stored(cx: &Ctxt, cont: &Container) {
    for field in cont.pk_fields() {
        for (name, span) in field.attrs.storage_written() {
            cx.error(
                span,
                format!("the pk is stored in the key, not in a hash field: remove `{name}` from the pk field"),
            );
        }
    }
}

/// The pk finds its object already: no index applies to it.
pub fn check_pk_not_indexed(cx: &Ctxt, cont: &Container) {
    for field in cont.pk_fields() {
        for (name, span) in field.attrs.indexes_written() {
            cx.error(
                span,
                format!("the pk is the object's key, which already finds the object and is unique: remove `{name}` from the pk field"),
            );
        }
    }
}

/// A skipped field is not stored: no storage or index attribute applies
/// to it. Reported at `skip`, since either attribute may be the mistake.
pub fn check_skipped_field_bare(cx: &Ctxt, cont: &Container) {
    for field in cont.skipped_fields() {
        let Some(skip) = field.attrs.skip else {
            continue;
        };
        let storage = field.attrs.storage_written();
        let others = storage.iter().filter(|(name, _)| *name != "skip");
        for (name, _) in others.chain(&field.attrs.indexes_written()) {
            cx.error(
                skip,
                format!("a skipped field is not stored, so `{name}` means nothing on it: remove `skip` or `{name}`"),
            );
        }
    }
}

/// A stored name is not empty.
pub fn check_rename_not_empty(cx: &Ctxt, cont: &Container) {
    for field in cont.stored_fields() {
        if let Some(lit) = field.attrs.rename.as_ref().filter(|l| l.value().is_empty()) {
            cx.error(
                lit.span(),
                "a field name cannot be empty: write e.g. `rename = \"score\"`",
            );
        }
    }
}

/// No field is stored as `_count` (the write count) or `_refs` (the
/// mark a write of a reference leaves on its target).
pub fn check_count_reserved(cx: &Ctxt, cont: &Container) {
    for field in cont.stored_fields() {
        let name = field.stored_name();
        let Some((_, what)) = RESERVED.iter().find(|(reserved, _)| *reserved == name) else {
            continue;
        };
        match &field.attrs.rename {
            Some(lit) => cx.error(
                lit.span(),
                format!("`{name}` is reserved for {what}: rename the field to something else"),
            ),
            None => cx.error(
                field.ident.span(),
                format!("`{name}` is reserved for {what}: rename the field, or store it under another name with `#[redmodel(rename = \"{}\")]`", &name[1..]),
            ),
        }
    }
}

/// A reference field's `on_delete` fits its type: `clear` (and its
/// deprecated spelling `cascade`) only on an optional reference, since
/// clearing a required one leaves an object that no longer loads.
pub fn check_on_delete_fits_reference(cx: &Ctxt, cont: &Container) {
    for field in cont.stored_fields() {
        let (Some(on_delete), Some(_)) = (field.attrs.on_delete, field.ref_target()) else {
            continue;
        };
        if reference::optional(&field.original.ty) {
            continue;
        }
        let written = match on_delete.action {
            Action::Clear => "clear",
            Action::Cascade => "cascade",
            Action::Restrict | Action::Delete => continue,
        };
        cx.error(
            on_delete.span,
            format!("`on_delete = \"{written}\"` removes the reference, and `{}` is a required `Ref`: its object would no longer load. Write `on_delete = \"restrict\"` (the default: refuse the delete while it is referenced) or `on_delete = \"delete\"` (delete this object with it), or make the field an `Option<Ref<...>>`", field.ident),
        );
    }
}

/// No two fields are stored under one name: the later one is reported.
pub fn check_stored_names_distinct(cx: &Ctxt, cont: &Container) {
    let stored: Vec<_> = cont.stored_fields().collect();
    for (i, field) in stored.iter().enumerate() {
        let name = field.stored_name();
        if let Some(previous) = stored[..i].iter().find(|p| p.stored_name() == name) {
            cx.error(
                field.stored_name_span(),
                format!(
                    "two fields are stored as `{name}` (this one and `{}`): give one of them another `rename`",
                    previous.ident
                ),
            );
        }
    }
}

/// `on_delete` is written on a reference field.
pub fn check_on_delete_on_reference(cx: &Ctxt, cont: &Container) {
    for field in cont.stored_fields() {
        if let (Some(on_delete), None) = (field.attrs.on_delete, field.ref_target()) {
            cx.error(
                on_delete.span,
                "`on_delete` applies to a reference field (`Ref<Model>` or `Option<Ref<Model>>`); this field holds no reference: remove it",
            );
        }
    }
}

/// A field's `ttl` is a positive duration, on a hash field that reads
/// back absent once it expires: an `Option` (or one with a `default`),
/// not a single value's (the struct's `ttl` is the key's).
pub fn check_field_ttl(cx: &Ctxt, cont: &Container) {
    for field in cont.stored_fields() {
        let Some(lit) = &field.attrs.ttl else {
            continue;
        };
        if let Err(message) = crate::duration::parse_millis(&lit.value()) {
            cx.error(lit.span(), message);
        } else if cont.attrs.single.is_some() {
            cx.error(
                lit.span(),
                "a single-value sub-object is one string key, not a hash of fields: put the `ttl` on the struct",
            );
        } else if !field.is_option() && field.attrs.default.is_none() {
            cx.error(
                lit.span(),
                format!(
                    "a field with a TTL is absent once it expires, and `{}` must always be stored: make it an `Option<...>`, or give it `#[redmodel(default)]`",
                    field.ident
                ),
            );
        }
    }
}
