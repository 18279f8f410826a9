//! The model a derive generates code for: built from a container whose
//! rules all passed, so that code generation has nothing left to check.

use proc_macro2::Span;
use syn::{Ident, Path, Type, Visibility};

use crate::ast::{self, reference, Container, Index};
use crate::attr::{Action, DefaultAttr};
use crate::Kind;

/// A model to generate code for.
pub struct Model<'c> {
    pub ident: &'c Ident,
    pub table: String,
    pub body: Body<'c>,
}

/// What a model stores.
pub enum Body<'c> {
    Object(Object<'c>),
    Relation(Relation<'c>),
}

/// An admin or a sub-object.
pub struct Object<'c> {
    /// `None` for an admin model.
    pub owner: Option<&'c Path>,
    pub pk: &'c syn::Field,
    pub fields: Vec<DataField<'c>>,
    /// Fields that are not stored: filled with their default on load.
    pub skipped: Vec<&'c syn::Field>,
    pub single: bool,
    pub sync_every: u64,
    /// The model's TTL, in milliseconds.
    pub ttl: Option<u64>,
    /// An admin's slot group (`slot_group = "shop"`).
    pub slot_group: Option<String>,
}

/// A stored field.
pub struct DataField<'c> {
    pub field: &'c syn::Field,
    pub ident: &'c Ident,
    /// The name of the hash field.
    pub name: String,
    /// The name of the field's handle constant.
    pub handle: String,
    pub json: bool,
    pub default: Option<&'c DefaultAttr>,
    /// The indexes declared on the field.
    pub indexes: Vec<Index>,
    /// For a reference field: the model pointed at.
    pub ref_target: Option<Type>,
    /// For a reference field: what deleting its target does (the default
    /// resolved).
    pub on_delete: Option<Action>,
    /// Whether the reference field is required (not an `Option`).
    pub required: bool,
    /// Where `on_delete = "cascade"`, the deprecated spelling of `clear`,
    /// was written on a reference field.
    pub deprecated_cascade: Option<Span>,
    /// The field's TTL, in milliseconds.
    pub ttl: Option<u64>,
}

impl DataField<'_> {
    /// The field's type.
    pub fn ty(&self) -> &Type {
        &self.field.ty
    }

    /// The field's visibility, which its handle constants share.
    pub fn vis(&self) -> &Visibility {
        &self.field.vis
    }
}

/// A relation: a list of member keys under an owner.
pub struct Relation<'c> {
    pub owner: &'c Path,
    pub member: &'c Path,
    pub inverse: Option<&'c Path>,
    /// `on_delete = "restrict"`.
    pub restrict: bool,
}

impl<'c> Model<'c> {
    /// The model of a container that passed every rule; `None` only if
    /// the rules let through a container without one of its parts.
    pub fn from_checked(cont: &'c Container) -> Option<Self> {
        let body = match cont.kind {
            Kind::Relation => Body::Relation(relation(cont)?),
            Kind::Admin | Kind::SubObject => Body::Object(object(cont)?),
        };
        Some(Model {
            ident: cont.ident(),
            table: cont.table(),
            body,
        })
    }
}

fn relation<'c>(cont: &'c Container) -> Option<Relation<'c>> {
    let attrs = &cont.attrs;
    Some(Relation {
        owner: attrs.owner.as_ref()?,
        member: attrs.member.as_ref()?,
        inverse: attrs.inverse.as_ref(),
        restrict: attrs
            .on_delete
            .is_some_and(|o| o.action == Action::Restrict),
    })
}

fn object<'c>(cont: &'c Container) -> Option<Object<'c>> {
    let owner = match cont.kind {
        Kind::SubObject => Some(cont.attrs.owner.as_ref()?),
        _ => None,
    };
    Some(Object {
        owner,
        pk: cont.pk_fields().next()?.original,
        fields: cont
            .stored_fields()
            .map(|f| data_field(f, cont.kind))
            .collect(),
        skipped: cont.skipped_fields().map(|f| f.original).collect(),
        single: cont.attrs.single.is_some(),
        sync_every: cont.sync_every(),
        ttl: cont.valid_ttl(),
        slot_group: cont.attrs.slot_group.as_ref().map(syn::LitStr::value),
    })
}

fn data_field<'c>(field: &'c ast::Field, kind: Kind) -> DataField<'c> {
    DataField {
        field: field.original,
        ident: field.ident,
        name: field.stored_name(),
        handle: field.handle_name(),
        json: field.is_json(),
        default: field.attrs.default.as_ref(),
        indexes: field.indexes(kind),
        ref_target: field.ref_target(),
        on_delete: field.ref_action(),
        required: !reference::optional(&field.original.ty),
        deprecated_cascade: field
            .attrs
            .on_delete
            .filter(|o| o.action == Action::Cascade)
            .map(|o| o.span),
        ttl: field.valid_ttl(),
    }
}
