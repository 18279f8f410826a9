//! The rules a model's attributes follow, one function each, as in
//! serde_derive. Every rule reports at the user's tokens and says what to
//! write instead; all rules run, so that all errors are reported at once.

mod container;
mod field;
mod index;
mod object;
mod relation;

use crate::ast::Container;
use crate::ctxt::Ctxt;
use crate::Kind;

/// A rule: reports to `cx` what in the container breaks it.
type Rule = fn(&Ctxt, &Container);

/// The rules of every derive.
const CONTAINER_RULES: &[Rule] = &[
    container::check_not_generic,
    container::check_table_name,
    container::check_slot_group_name,
    container::check_attrs_fit_kind,
];

/// The rules of `#[derive(Relation)]`.
const RELATION_RULES: &[Rule] = &[
    relation::check_unit_struct,
    relation::check_models,
    relation::check_on_delete,
];

/// The rules of `#[derive(Admin)]` and `#[derive(SubObject)]`.
const OBJECT_RULES: &[Rule] = &[
    object::check_sub_object_owner,
    object::check_sync_every,
    object::check_ttl,
    object::check_named_fields,
    object::check_pk_present,
    object::check_one_pk,
    object::check_single_value,
    field::check_pk_not_stored,
    field::check_pk_not_indexed,
    field::check_skipped_field_bare,
    field::check_rename_not_empty,
    field::check_count_reserved,
    field::check_stored_names_distinct,
    field::check_on_delete_on_reference,
    field::check_on_delete_fits_reference,
    field::check_field_ttl,
    index::check_recent_cap,
    index::check_indexes_on_admin,
    index::check_tags_not_json,
    index::check_tags_alone,
    index::check_handle_names_distinct,
];

/// Runs every rule that applies to the container's kind.
pub fn check(cx: &Ctxt, cont: &Container) {
    let kind_rules = match cont.kind {
        Kind::Relation => RELATION_RULES,
        Kind::Admin | Kind::SubObject => OBJECT_RULES,
    };
    for rule in CONTAINER_RULES.iter().chain(kind_rules) {
        rule(cx, cont);
    }
}
