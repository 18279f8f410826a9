//! The input as the derive reads it: the struct and its fields with their
//! parsed attributes, before any rule is checked. The names and indexes
//! that follow from the attributes are computed here, once, for the rules
//! and for the model.

mod index;
pub mod reference;

use proc_macro2::Span;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Type};

use crate::attr::{self, Action};
use crate::ctxt::Ctxt;
use crate::name::{snake_case, unraw, upper_case};
use crate::Kind;

pub use index::{Index, IndexKind};

/// The default of `sync_every` (the seed's `sync_count`).
const DEFAULT_SYNC_EVERY: u64 = 10;

/// The struct a derive is applied to.
pub struct Container<'a> {
    pub input: &'a DeriveInput,
    pub kind: Kind,
    pub attrs: attr::Container,
    /// The fields of an admin or sub-object with their attributes; `None`
    /// if the struct has no named fields (a rule reports it), and for a
    /// relation, whose fields are an error of their own.
    pub fields: Option<Vec<Field<'a>>>,
}

/// A field of an admin or sub-object.
pub struct Field<'a> {
    pub original: &'a syn::Field,
    pub ident: &'a Ident,
    pub attrs: attr::Field,
}

impl<'a> Container<'a> {
    /// Parses the attributes of the struct and of its fields; their
    /// syntax errors go to `cx`.
    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput, kind: Kind) -> Self {
        let attrs = attr::Container::from_ast(cx, &input.attrs);
        let fields = match (&input.data, kind) {
            (_, Kind::Relation) => None,
            (Data::Struct(data), _) => match &data.fields {
                Fields::Named(named) => Some(
                    named
                        .named
                        .iter()
                        .filter_map(|field| Field::from_ast(cx, field))
                        .collect(),
                ),
                _ => None,
            },
            _ => None,
        };
        Container {
            input,
            kind,
            attrs,
            fields,
        }
    }

    /// The struct's name.
    pub fn ident(&self) -> &'a Ident {
        &self.input.ident
    }

    /// The fields, none if the struct has no named fields.
    pub fn fields(&self) -> &[Field<'a>] {
        self.fields.as_deref().unwrap_or_default()
    }

    /// The fields marked `pk` (one, in a valid model).
    pub fn pk_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields().iter().filter(|f| f.attrs.pk.is_some())
    }

    /// The fields stored in the hash (or the single value).
    pub fn stored_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields().iter().filter(|f| f.is_stored())
    }

    /// The fields that are not stored, filled with their default on load.
    pub fn skipped_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields()
            .iter()
            .filter(|f| f.attrs.pk.is_none() && f.attrs.skip.is_some())
    }

    /// The table: `table = "..."`, or the struct's name in snake_case.
    pub fn table(&self) -> String {
        match &self.attrs.table {
            Some(lit) => lit.value(),
            None => snake_case(&unraw(self.ident())),
        }
    }

    /// `sync_every`, if written as a number of writes of at least 1.
    pub fn valid_sync_every(&self) -> Option<u64> {
        let lit = self.attrs.sync_every.as_ref()?;
        lit.base10_parse::<u64>().ok().filter(|n| *n >= 1)
    }

    /// The model's TTL in milliseconds, if written and valid.
    pub fn valid_ttl(&self) -> Option<u64> {
        let lit = self.attrs.ttl.as_ref()?;
        crate::duration::parse_millis(&lit.value()).ok()
    }

    /// `sync_every`, or its default.
    pub fn sync_every(&self) -> u64 {
        self.valid_sync_every().unwrap_or(DEFAULT_SYNC_EVERY)
    }
}

impl<'a> Field<'a> {
    fn from_ast(cx: &Ctxt, original: &'a syn::Field) -> Option<Self> {
        Some(Field {
            original,
            ident: original.ident.as_ref()?,
            attrs: attr::Field::from_ast(cx, &original.attrs),
        })
    }

    /// Neither the pk (stored in the key) nor skipped.
    pub fn is_stored(&self) -> bool {
        self.attrs.pk.is_none() && self.attrs.skip.is_none()
    }

    /// The name of the hash field: `rename = "..."`, or the field's name.
    pub fn stored_name(&self) -> String {
        match &self.attrs.rename {
            Some(lit) => lit.value(),
            None => unraw(self.ident),
        }
    }

    /// Where the stored name was written: the `rename`, or the field's name.
    pub fn stored_name_span(&self) -> Span {
        self.attrs
            .rename
            .as_ref()
            .map_or(self.ident.span(), LitStr::span)
    }

    /// The name of the field's handle constant (`MATH` for `math`).
    pub fn handle_name(&self) -> String {
        upper_case(&unraw(self.ident))
    }

    /// The field's TTL in milliseconds, if written and valid.
    pub fn valid_ttl(&self) -> Option<u64> {
        let lit = self.attrs.ttl.as_ref()?;
        crate::duration::parse_millis(&lit.value()).ok()
    }

    /// Whether the field's type is `Option<...>` (as written: the derive
    /// sees tokens, not types).
    pub fn is_option(&self) -> bool {
        match &self.original.ty {
            Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "Option"),
            _ => false,
        }
    }

    /// Whether the field is stored as JSON: `json`, or a tags field.
    pub fn is_json(&self) -> bool {
        self.attrs.json.is_some() || self.attrs.tags.is_some()
    }

    /// For a reference field (`Ref<M>`, `ObjectRef<M>`, or an `Option` of
    /// one): the model pointed at. A `json` field stores JSON text, never a
    /// bare key: it is not a reference.
    pub fn ref_target(&self) -> Option<Type> {
        if self.attrs.json.is_some() {
            return None;
        }
        reference::target(&self.original.ty)
    }

    /// For a reference field, what deleting its target does: the action
    /// written, else `restrict` for a required reference and `clear` for
    /// an optional one. `cascade`, the deprecated spelling of `clear`, is
    /// `clear`.
    pub fn ref_action(&self) -> Option<Action> {
        self.ref_target()?;
        let optional = reference::optional(&self.original.ty);
        Some(match self.attrs.on_delete.map(|o| o.action) {
            Some(Action::Cascade | Action::Clear) => Action::Clear,
            Some(action) => action,
            None if optional => Action::Clear,
            None => Action::Restrict,
        })
    }
}
