//! The internal representation of a model, built from the input and
//! validated: everything that can be wrong with the attributes is found
//! here, before any code is generated.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Path, Type, Visibility};

use crate::attr::{self, DefaultAttr, Errors};
use crate::case::{snake_case, upper_case};
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
    /// The indexes declared on the field.
    pub indexes: Vec<Index>,
    /// For a reference field (`Ref<M>`, `ObjectRef<M>`, or an `Option` of
    /// one): the model pointed at.
    pub ref_target: Option<Type>,
    /// `on_delete = "restrict"` on a reference field.
    pub restrict: bool,
}

/// An index declared on a field.
pub struct Index {
    pub kind: IndexKind,
    /// Where the attribute was written.
    pub span: Span,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Unique,
    Sorted,
    Tags,
    Recent(u32),
}

impl IndexKind {
    pub fn attr_name(self) -> &'static str {
        match self {
            IndexKind::Unique => "unique",
            IndexKind::Sorted => "sorted",
            IndexKind::Tags => "tags",
            IndexKind::Recent(_) => "recent",
        }
    }
}

impl Index {
    /// The name of the index's handle constant on the model: the field's
    /// handle, then the attribute in upper case (`NAME_UNIQUE`,
    /// `LOGINS_SORTED`, `TAGS_TAGS`, `LAST_LOGIN_RECENT`). One rule, so that
    /// the name follows from the declaration, and a field may carry two
    /// indexes (`sorted, recent = 10`).
    pub fn handle_name(&self, field_handle: &str) -> String {
        format!("{field_handle}_{}", self.kind.attr_name().to_uppercase())
    }
}

impl DataField<'_> {
    pub fn ty(&self) -> &Type {
        &self.field.ty
    }

    /// The name of the field's handle constant (`MATH` for `math`).
    pub fn handle_name(&self) -> String {
        upper_case(&unraw(self.ident))
    }

    pub fn vis(&self) -> &Visibility {
        &self.field.vis
    }
}

pub struct Relation {
    pub owner: Path,
    pub member: Path,
    pub inverse: Option<Path>,
    /// `on_delete = "restrict"`.
    pub restrict: bool,
}

/// The model a reference field points at: `T` in `Ref<T>`, `ObjectRef<T>`,
/// `Option<Ref<T>>` (by the type's spelling, as a derive sees no more).
pub fn ref_target(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(inner)) = args.args.first() else {
        return None;
    };
    match last.ident.to_string().as_str() {
        "Ref" | "ObjectRef" if args.args.len() == 1 => Some(inner.clone()),
        "Option" => ref_target(inner),
        _ => None,
    }
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
        restrict: attrs.on_delete.is_some_and(|o| o.restrict),
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
    not_for(
        errors,
        attrs.on_delete.map(|o| o.span),
        "on_delete",
        kind,
        "`on_delete` goes on a relation (`#[derive(Relation)]`) or on a reference field (`Ref<Model>`)",
    );
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
            for (name, other) in index_spans(&fa) {
                errors.spanned(
                    other,
                    format!("the pk is the object's key, which already finds the object and is unique: remove `{name}` from the pk field"),
                );
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
            let indexes = index_spans(&fa);
            for (name, other) in [
                ("json", fa.json),
                ("rename", fa.rename.as_ref().map(|l| l.span())),
                ("default", fa.default.as_ref().map(DefaultAttr::span)),
            ]
            .into_iter()
            .chain(indexes.into_iter().map(|(n, s)| (n, Some(s))))
            {
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
        let indexes = field_indexes(&fa, kind, errors);
        // A `json` field stores JSON text, never a bare key: not a referrer.
        let ref_target = ref_target(&field.ty).filter(|_| fa.json.is_none());
        if let (Some(on_delete), None) = (fa.on_delete, &ref_target) {
            errors.spanned(
                on_delete.span,
                "`on_delete` applies to a reference field (`Ref<Model>` or `Option<Ref<Model>>`); this field holds no reference: remove it",
            );
        }
        data.push(DataField {
            field,
            ident,
            name,
            // A tags field is stored as JSON.
            json: fa.json.is_some() || fa.tags.is_some(),
            default: fa.default,
            indexes,
            ref_target,
            restrict: fa.on_delete.is_some_and(|o| o.restrict),
        });
    }
    check_handle_names(&data, errors);

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

/// The index attributes of a field, with where they were written.
fn index_spans(fa: &attr::FieldAttrs) -> Vec<(&'static str, Span)> {
    [
        ("unique", fa.unique),
        ("sorted", fa.sorted),
        ("tags", fa.tags),
        ("recent", fa.recent.as_ref().map(|l| l.span())),
    ]
    .into_iter()
    .filter_map(|(name, span)| span.map(|s| (name, s)))
    .collect()
}

/// Checks the index attributes of a stored field.
fn field_indexes(fa: &attr::FieldAttrs, kind: Kind, errors: &mut Errors) -> Vec<Index> {
    let mut out = Vec::new();
    for (flag, kind) in [
        (fa.unique, IndexKind::Unique),
        (fa.sorted, IndexKind::Sorted),
        (fa.tags, IndexKind::Tags),
    ] {
        if let Some(span) = flag {
            out.push(Index { kind, span });
        }
    }
    if let Some(lit) = &fa.recent {
        match lit.base10_parse::<u32>() {
            Ok(cap) if cap >= 1 => out.push(Index {
                kind: IndexKind::Recent(cap),
                span: lit.span(),
            }),
            _ => errors.spanned(
                lit.span(),
                format!(
                    "`recent` is how many objects the list keeps, from 1 to {}: write e.g. `recent = 10`",
                    u32::MAX
                ),
            ),
        }
    }
    if kind != Kind::Admin {
        for index in &out {
            errors.spanned(
                index.span,
                format!(
                    "`{}` applies to fields of #[derive(Admin)] models: an index lists the objects of one model, and a sub-object lives under its admin",
                    index.kind.attr_name()
                ),
            );
        }
        return Vec::new();
    }
    if let Some(tags) = fa.tags {
        if let Some(json) = fa.json {
            errors.spanned(
                json,
                "a `tags` field is stored as JSON already: remove `json`",
            );
        }
        for (name, other) in [("unique", fa.unique), ("sorted", fa.sorted)] {
            if other.is_some() {
                errors.spanned(
                    tags,
                    format!("a `tags` field holds several values, each with its own set: it cannot also be `{name}`"),
                );
            }
        }
        // Only the tags index, so that the conflict is reported once.
        out.retain(|i| matches!(i.kind, IndexKind::Tags | IndexKind::Recent(_)));
    }
    out
}

/// Reports two handle constants with the same name (a field's and an
/// index's, such as field `by_name` and the unique index on `name`).
fn check_handle_names(fields: &[DataField], errors: &mut Errors) {
    let mut seen: Vec<(String, String)> = Vec::new();
    for f in fields {
        let handle = f.handle_name();
        let mut names = vec![(
            handle.clone(),
            format!("the field `{}`", unraw(f.ident)),
            f.ident.span(),
        )];
        for index in &f.indexes {
            names.push((
                index.handle_name(&handle),
                format!(
                    "the `{}` index on `{}`",
                    index.kind.attr_name(),
                    unraw(f.ident)
                ),
                index.span,
            ));
        }
        for (name, what, span) in names {
            if let Some((_, other)) = seen.iter().find(|(n, _)| *n == name) {
                errors.spanned(
                    span,
                    format!("the handle `{name}` of {what} has the same name as the handle of {other}: rename one of the fields"),
                );
            } else {
                seen.push((name, what));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ref_target;
    use quote::ToTokens;

    fn target(ty: &str) -> Option<String> {
        let ty: syn::Type = syn::parse_str(ty).unwrap();
        ref_target(&ty).map(|t| t.to_token_stream().to_string())
    }

    #[test]
    fn reference_fields_are_found_by_their_spelling() {
        assert_eq!(target("Ref<Class>").as_deref(), Some("Class"));
        assert_eq!(
            target("redmodel::model::ObjectRef<a::Class>").as_deref(),
            Some("a :: Class")
        );
        assert_eq!(target("Option<Ref<Class>>").as_deref(), Some("Class"));
        assert_eq!(target("String"), None);
        assert_eq!(target("Option<String>"), None);
        assert_eq!(target("Vec<Ref<Class>>"), None);
    }
}
