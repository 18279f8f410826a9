//! Parsing of `#[redmodel(...)]` (and the `default` of `#[serde(...)]`)
//! into spanned raw values. Each attribute's own shape is checked here (a
//! flag takes no value, `table` takes a string, ...); which attribute fits
//! which model, and how attributes combine, is checked in [`crate::check`].

mod serde;
mod value;

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, ExprPath, LitInt, LitStr, Path};

use crate::ctxt::Ctxt;
use value::{flag, int, model_path, set, string};

/// A flag attribute (`pk`, `skip`, ...), where it was written.
pub type Flag = Option<Span>;

/// What `on_delete` says to do with a reference when its target is
/// deleted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Refuse the delete while the reference holds the target.
    Restrict,
    /// Remove the reference (an optional one only).
    Clear,
    /// Delete the referring object.
    Delete,
    /// A relation's default: remove the member from the lists. On a
    /// reference field, a deprecated spelling of `clear`.
    Cascade,
}

/// An `on_delete` attribute: its action, where it was written and where
/// its value was.
#[derive(Clone, Copy)]
pub struct OnDelete {
    pub action: Action,
    pub span: Span,
    pub value_span: Span,
}

/// `default`, or `default = "path::to::fn"`.
pub enum DefaultAttr {
    Trait(Span),
    Function(ExprPath),
}

impl DefaultAttr {
    /// Where the attribute was written.
    pub fn span(&self) -> Span {
        match self {
            DefaultAttr::Trait(span) => *span,
            DefaultAttr::Function(path) => path.span(),
        }
    }
}

/// The attributes of the struct itself.
#[derive(Default)]
pub struct Container {
    pub table: Option<LitStr>,
    pub slot_group: Option<LitStr>,
    pub owner: Option<Path>,
    pub member: Option<Path>,
    pub inverse: Option<Path>,
    pub sync_every: Option<LitInt>,
    pub ttl: Option<LitStr>,
    pub single: Flag,
    pub on_delete: Option<OnDelete>,
}

/// The attributes of one field.
#[derive(Default)]
pub struct Field {
    pub pk: Flag,
    pub skip: Flag,
    pub json: Flag,
    pub default: Option<DefaultAttr>,
    pub rename: Option<LitStr>,
    pub unique: Flag,
    pub sorted: Flag,
    pub tags: Flag,
    pub recent: Option<LitInt>,
    pub on_delete: Option<OnDelete>,
    pub ttl: Option<LitStr>,
}

/// The container attribute names, for "expected one of" messages.
pub const CONTAINER_NAMES: &[&str] = &[
    "table",
    "owner",
    "member",
    "inverse",
    "sync_every",
    "ttl",
    "single",
    "on_delete",
    "slot_group",
];
/// The field attribute names.
pub const FIELD_NAMES: &[&str] = &[
    "pk",
    "rename",
    "skip",
    "json",
    "default",
    "unique",
    "sorted",
    "tags",
    "recent",
    "on_delete",
    "ttl",
];

fn redmodel_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("redmodel"))
}

impl Container {
    /// Parses the `#[redmodel(...)]` attributes of the struct.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Container::default();
        for attr in redmodel_attrs(attrs) {
            if let Err(e) = attr.parse_nested_meta(|meta| out.parse_one(&meta)) {
                cx.syn_error(e);
            }
        }
        out
    }

    fn parse_one(&mut self, meta: &ParseNestedMeta) -> syn::Result<()> {
        if meta.path.is_ident("table") {
            let lit = string(meta, "table = \"teacher\"")?;
            set(meta, &mut self.table, lit)
        } else if meta.path.is_ident("slot_group") {
            let lit = string(meta, "slot_group = \"shop\"")?;
            set(meta, &mut self.slot_group, lit)
        } else if meta.path.is_ident("owner") {
            let path = model_path(meta, "owner = Student")?;
            set(meta, &mut self.owner, path)
        } else if meta.path.is_ident("member") {
            let path = model_path(meta, "member = Class")?;
            set(meta, &mut self.member, path)
        } else if meta.path.is_ident("inverse") {
            let path = model_path(meta, "inverse = ClassTeachers")?;
            set(meta, &mut self.inverse, path)
        } else if meta.path.is_ident("sync_every") {
            let lit = int(meta, "sync_every = 10", "a whole number of writes")?;
            set(meta, &mut self.sync_every, lit)
        } else if meta.path.is_ident("ttl") {
            let lit = string(meta, crate::duration::EXAMPLE)?;
            set(meta, &mut self.ttl, lit)
        } else if meta.path.is_ident("single") {
            flag(meta, &mut self.single)
        } else if meta.path.is_ident("on_delete") {
            let parsed = value::on_delete(meta)?;
            set(meta, &mut self.on_delete, parsed)
        } else if value::is_one_of(meta, FIELD_NAMES) {
            Err(value::misplaced(
                meta,
                "field",
                "on a field, not on the struct",
            ))
        } else {
            Err(value::unknown(meta, CONTAINER_NAMES))
        }
    }

    /// The attributes written, with where: for the rules on which
    /// attributes fit which kind of model.
    pub fn written(&self) -> Vec<(&'static str, Span)> {
        [
            ("table", self.table.as_ref().map(LitStr::span)),
            ("slot_group", self.slot_group.as_ref().map(LitStr::span)),
            ("owner", self.owner.as_ref().map(Spanned::span)),
            ("member", self.member.as_ref().map(Spanned::span)),
            ("inverse", self.inverse.as_ref().map(Spanned::span)),
            ("sync_every", self.sync_every.as_ref().map(LitInt::span)),
            ("ttl", self.ttl.as_ref().map(LitStr::span)),
            ("single", self.single),
            ("on_delete", self.on_delete.map(|o| o.span)),
        ]
        .into_iter()
        .filter_map(|(name, span)| Some((name, span?)))
        .collect()
    }
}

impl Field {
    /// Parses the `#[redmodel(...)]` attributes of a field, and the
    /// `default` of its `#[serde(...)]` attributes.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Field::default();
        for attr in redmodel_attrs(attrs) {
            if let Err(e) = attr.parse_nested_meta(|meta| out.parse_one(&meta)) {
                cx.syn_error(e);
            }
        }
        if out.default.is_none() {
            out.default = serde::default(attrs);
        }
        out
    }

    fn parse_one(&mut self, meta: &ParseNestedMeta) -> syn::Result<()> {
        if meta.path.is_ident("pk") {
            flag(meta, &mut self.pk)
        } else if meta.path.is_ident("skip") {
            flag(meta, &mut self.skip)
        } else if meta.path.is_ident("json") {
            flag(meta, &mut self.json)
        } else if meta.path.is_ident("rename") {
            let lit = string(meta, "rename = \"stored_name\"")?;
            set(meta, &mut self.rename, lit)
        } else if meta.path.is_ident("default") {
            let parsed = value::default(meta)?;
            set(meta, &mut self.default, parsed)
        } else if meta.path.is_ident("unique") {
            flag(meta, &mut self.unique)
        } else if meta.path.is_ident("sorted") {
            flag(meta, &mut self.sorted)
        } else if meta.path.is_ident("tags") {
            flag(meta, &mut self.tags)
        } else if meta.path.is_ident("recent") {
            let lit = int(meta, "recent = 10", "how many objects the list keeps")?;
            set(meta, &mut self.recent, lit)
        } else if meta.path.is_ident("on_delete") {
            let parsed = value::on_delete(meta)?;
            set(meta, &mut self.on_delete, parsed)
        } else if meta.path.is_ident("ttl") {
            let lit = string(meta, "ttl = \"10m\"")?;
            set(meta, &mut self.ttl, lit)
        } else if value::is_one_of(meta, CONTAINER_NAMES) {
            Err(value::misplaced(
                meta,
                "struct",
                "on the struct, not on a field",
            ))
        } else {
            Err(value::unknown(meta, FIELD_NAMES))
        }
    }

    /// The storage attributes written (all but the pk and the indexes),
    /// with where.
    pub fn storage_written(&self) -> Vec<(&'static str, Span)> {
        [
            ("skip", self.skip),
            ("ttl", self.ttl.as_ref().map(LitStr::span)),
            ("json", self.json),
            ("rename", self.rename.as_ref().map(LitStr::span)),
            ("default", self.default.as_ref().map(DefaultAttr::span)),
        ]
        .into_iter()
        .filter_map(|(name, span)| Some((name, span?)))
        .collect()
    }

    /// The index attributes written, with where (`recent` whatever its
    /// value).
    pub fn indexes_written(&self) -> Vec<(&'static str, Span)> {
        [
            ("unique", self.unique),
            ("sorted", self.sorted),
            ("tags", self.tags),
            ("recent", self.recent.as_ref().map(LitInt::span)),
        ]
        .into_iter()
        .filter_map(|(name, span)| Some((name, span?)))
        .collect()
    }
}
