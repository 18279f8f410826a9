//! The internal representation of a model, built from the input and
//! validated: everything that can be wrong with the attributes is found
//! here, before any code is generated.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Path, Type, Visibility};

use crate::attr::{self, DefaultAttr, Errors};
use crate::case::snake_case;
use crate::Kind;

/// The write count field every hash model keeps.
const COUNT_FIELD: &str = "_count";
/// The default of `sync_every` (the seed's `sync_count`).
const DEFAULT_SYNC_EVERY: u64 = 10;

pub struct Model<'a> {
    pub ident: &'a Ident,
    pub table: String,
    pub body: Body<'a>,
}

pub enum Body<'a> {
    Object(Object<'a>),
    Relation(Relation),
}

/// An admin or a sub-object.
pub struct Object<'a> {
    /// `None` for an admin model.
    pub owner: Option<Path>,
    pub pk: &'a syn::Field,
    pub fields: Vec<DataField<'a>>,
    /// Fields that are not stored: filled with their default on load.
    pub skipped: Vec<&'a syn::Field>,
    pub single: bool,
    pub sync_every: u64,
}

/// A stored field.
pub struct DataField<'a> {
    pub field: &'a syn::Field,
    pub ident: &'a Ident,
    /// The name of the hash field.
    pub name: String,
    pub json: bool,
    pub default: Option<DefaultAttr>,
}

impl DataField<'_> {
    pub fn ty(&self) -> &Type {
        &self.field.ty
    }

    pub fn vis(&self) -> &Visibility {
        &self.field.vis
    }
}

pub struct Relation {
    pub owner: Path,
    pub member: Path,
    pub inverse: Option<Path>,
}

/// The name of a field as Rust writes it, without `r#`.
fn unraw(ident: &Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").map(str::to_string).unwrap_or(name)
}

fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl<'a> Model<'a> {
    pub fn from_input(input: &'a DeriveInput, kind: Kind) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let derive = kind.derive_name();
        if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
            errors.spanned(
                input.generics.span(),
                format!("#[derive({derive})] does not support generic structs: declare a concrete struct for each model"),
            );
        }
        let attrs = attr::container(&input.attrs, &mut errors);
        let table = table_name(&attrs, input, &mut errors);

        let body = match kind {
            Kind::Relation => relation(attrs, input, &mut errors).map(Body::Relation),
            Kind::Admin | Kind::SubObject => {
                object(attrs, input, kind, &mut errors).map(Body::Object)
            }
        };
        errors.finish()?;
        let body = body.ok_or_else(|| syn::Error::new(Span::call_site(), "invalid model"))?;
        Ok(Model {
            ident: &input.ident,
            table,
            body,
        })
    }
}

fn table_name(attrs: &attr::ContainerAttrs, input: &DeriveInput, errors: &mut Errors) -> String {
    match &attrs.table {
        Some(lit) => {
            let table = lit.value();
            if !is_valid_name(&table) {
                errors.spanned(
                    lit.span(),
                    format!(
                        "invalid table name {table:?}: a table name is made of ASCII letters, digits, `_`, `-` and `.`, and does not start with `_` (`:` separates key parts); write e.g. `table = \"{}\"`",
                        suggest_name(&table, &input.ident)
                    ),
                );
            }
            table
        }
        None => snake_case(&unraw(&input.ident)),
    }
}

/// A valid name close to `name`, for error messages.
fn suggest_name(name: &str, fallback: &Ident) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('_').to_string();
    if cleaned.is_empty() {
        snake_case(&unraw(fallback))
    } else {
        cleaned
    }
}

/// Reports a container attribute that does not apply to this kind.
fn not_for(errors: &mut Errors, span: Option<Span>, name: &str, kind: Kind, instead: &str) {
    if let Some(span) = span {
        errors.spanned(
            span,
            format!(
                "`{name}` does not apply to #[derive({})]: {instead}",
                kind.derive_name()
            ),
        );
    }
}

fn relation(
    attrs: attr::ContainerAttrs,
    input: &DeriveInput,
    errors: &mut Errors,
) -> Option<Relation> {
    let kind = Kind::Relation;
    not_for(
        errors,
        attrs.sync_every.as_ref().map(|l| l.span()),
        "sync_every",
        kind,
        "a relation is a list, it has no write count; remove it",
    );
    not_for(
        errors,
        attrs.single,
        "single",
        kind,
        "a relation is a list of member keys; remove it",
    );
    match &input.data {
        Data::Struct(data) if data.fields.is_empty() => {}
        Data::Struct(data) => errors.spanned(
            data.fields.span(),
            format!(
                "a relation has no fields (its data is the list of member keys): declare it as a unit struct, `struct {};`",
                input.ident
            ),
        ),
        _ => errors.spanned(
            input.ident.span(),
            format!("#[derive(Relation)] needs a unit struct: `struct {};`", input.ident),
        ),
    }
    let owner = attrs.owner.or_else(|| {
        errors.spanned(
            input.ident.span(),
            "a relation needs its owner and member models: add `#[redmodel(owner = Teacher, member = Class)]`",
        );
        None
    });
    let member = attrs.member.or_else(|| {
        if owner.is_some() {
            errors.spanned(
                input.ident.span(),
                "a relation needs its member model: add `member = Class` to `#[redmodel(...)]`",
            );
        }
        None
    });
    Some(Relation {
        owner: owner?,
        member: member?,
        inverse: attrs.inverse,
    })
}

fn object<'a>(
    attrs: attr::ContainerAttrs,
    input: &'a DeriveInput,
    kind: Kind,
    errors: &mut Errors,
) -> Option<Object<'a>> {
    let derive = kind.derive_name();
    let member_span = attrs.member.as_ref().map(Spanned::span);
    let inverse_span = attrs.inverse.as_ref().map(Spanned::span);
    let instead =
        "`member` and `inverse` declare a relation: use `#[derive(Relation)]` on a unit struct";
    not_for(errors, member_span, "member", kind, instead);
    not_for(errors, inverse_span, "inverse", kind, instead);
    if kind == Kind::Admin {
        not_for(
            errors,
            attrs.owner.as_ref().map(Spanned::span),
            "owner",
            kind,
            "an admin model stands alone; for a model stored under an admin, use `#[derive(SubObject)]` with `#[redmodel(owner = ...)]`",
        );
        not_for(
            errors,
            attrs.single,
            "single",
            kind,
            "an admin object is a hash; only a sub-object can be a single value (`#[derive(SubObject)]`)",
        );
    }
    let owner = match kind {
        Kind::SubObject => {
            if attrs.owner.is_none() {
                errors.spanned(
                    input.ident.span(),
                    "a sub-object needs the admin model it belongs to: add `#[redmodel(owner = Student)]`",
                );
            }
            attrs.owner
        }
        _ => None,
    };
    let sync_every = match &attrs.sync_every {
        None => DEFAULT_SYNC_EVERY,
        Some(lit) => match lit.base10_parse::<u64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                errors.spanned(
                    lit.span(),
                    "`sync_every` is a number of writes, at least 1: write e.g. `sync_every = 10`",
                );
                DEFAULT_SYNC_EVERY
            }
        },
    };

    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => &named.named,
            _ => {
                errors.spanned(
                    data.fields.span(),
                    format!("#[derive({derive})] needs named fields: `struct {} {{ #[redmodel(pk)] id: String, ... }}`", input.ident),
                );
                return None;
            }
        },
        _ => {
            errors.spanned(
                input.ident.span(),
                format!("#[derive({derive})] needs a struct with named fields: `struct {} {{ #[redmodel(pk)] id: String, ... }}`", input.ident),
            );
            return None;
        }
    };

    let mut pk: Option<&syn::Field> = None;
    let mut data = Vec::new();
    let mut skipped = Vec::new();
    for field in fields {
        let fa = attr::field(&field.attrs, errors);
        let ident = field.ident.as_ref()?;
        if let Some(span) = fa.pk {
            for (name, other) in [
                ("skip", fa.skip),
                ("json", fa.json),
                ("rename", fa.rename.as_ref().map(|l| l.span())),
                ("default", fa.default.as_ref().map(DefaultAttr::span)),
            ] {
                if let Some(other) = other {
                    errors.spanned(
                        other,
                        format!("the pk is stored in the key, not in a hash field: remove `{name}` from the pk field"),
                    );
                }
            }
            if pk.is_some() {
                errors.spanned(
                    span,
                    "only one field can be the pk: remove `#[redmodel(pk)]` here (for a pk made of several parts, use one field of a type implementing `redmodel::model::KeyPart`)",
                );
            } else {
                pk = Some(field);
            }
            continue;
        }
        if let Some(span) = fa.skip {
            for (name, other) in [
                ("json", fa.json),
                ("rename", fa.rename.as_ref().map(|l| l.span())),
                ("default", fa.default.as_ref().map(DefaultAttr::span)),
            ] {
                if other.is_some() {
                    errors.spanned(
                        span,
                        format!("a skipped field is not stored, so `{name}` means nothing on it: remove `skip` or `{name}`"),
                    );
                }
            }
            skipped.push(field);
            continue;
        }
        let name = match &fa.rename {
            Some(lit) => {
                let name = lit.value();
                if name.is_empty() {
                    errors.spanned(
                        lit.span(),
                        "a field name cannot be empty: write e.g. `rename = \"score\"`",
                    );
                }
                if name == COUNT_FIELD {
                    errors.spanned(lit.span(), "`_count` is reserved for the write count: rename the field to something else");
                }
                name
            }
            None => {
                let name = unraw(ident);
                if name == COUNT_FIELD {
                    errors.spanned(
                        ident.span(),
                        "`_count` is reserved for the write count: rename the field, or store it under another name with `#[redmodel(rename = \"count\")]`",
                    );
                }
                name
            }
        };
        if let Some(previous) = data.iter().find(|d: &&DataField| d.name == name) {
            let span = fa.rename.as_ref().map(|l| l.span()).unwrap_or(ident.span());
            errors.spanned(
                span,
                format!(
                    "two fields are stored as `{name}` (this one and `{}`): give one of them another `rename`",
                    previous.ident
                ),
            );
        }
        data.push(DataField {
            field,
            ident,
            name,
            json: fa.json.is_some(),
            default: fa.default,
        });
    }

    let Some(pk) = pk else {
        errors.spanned(
            input.ident.span(),
            format!(
                "#[derive({derive})] needs a pk: mark the field that identifies an object with `#[redmodel(pk)]` (a String, an integer, or a type implementing `redmodel::model::KeyPart`)"
            ),
        );
        return None;
    };

    let single = attrs.single.is_some();
    if let Some(span) = attrs.single {
        if data.len() != 1 {
            errors.spanned(
                span,
                format!(
                    "a `single` sub-object stores exactly one value besides its pk, but `{}` has {} stored fields: keep one field, or remove `single` to store a hash",
                    input.ident,
                    data.len()
                ),
            );
        }
    }

    Some(Object {
        owner,
        pk,
        fields: data,
        skipped,
        single,
        sync_every,
    })
}
