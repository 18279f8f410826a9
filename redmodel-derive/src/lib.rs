//! Derive macros of redmodel: `#[derive(Admin)]`, `#[derive(SubObject)]`
//! and `#[derive(Relation)]`. See `redmodel::model` for what they generate
//! and the attributes they take.
//!
//! Built like serde_derive: the input is parsed into an internal
//! representation (the `ast` module), every attribute is checked with errors that
//! point at the user's tokens and say what to write instead (all of them
//! reported at once), and only then is code generated (the `expand` module).
//! Generated code names the runtime only through `::redmodel::__private`.

#![warn(missing_docs)]

mod ast;
mod attr;
mod case;
mod expand;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// The kind of model a derive produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Admin,
    SubObject,
    Relation,
}

impl Kind {
    fn derive_name(self) -> &'static str {
        match self {
            Kind::Admin => "Admin",
            Kind::SubObject => "SubObject",
            Kind::Relation => "Relation",
        }
    }
}

fn derive(input: TokenStream, kind: Kind) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    ast::Model::from_input(&input, kind)
        .map(|model| expand::expand(&model))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// An admin model: a struct stored as a hash at `TABLE:PK` (`teacher:A`).
///
/// Container attributes: `#[redmodel(table = "teacher")]` (default: the
/// struct's name in snake_case), `#[redmodel(sync_every = 10)]`.
/// Field attributes: `pk` (exactly one field), `rename = "name"`, `skip`,
/// `json`, `default` / `default = "path::to::fn"`, and the indexes kept in
/// step with every write: `unique`, `sorted`, `tags`, `recent = N` (see
/// `redmodel::model::index`). Each index adds a handle next to the field's
/// (`NAME_UNIQUE`, `LOGINS_SORTED`, `TAGS_TAGS`, `LAST_LOGIN_RECENT`).
/// A reference field (`Ref<M>`, `Option<Ref<M>>`) takes
/// `on_delete = "restrict"` (refuse to delete `M`'s object while the field
/// points at it) or `"cascade"` (the default: the delete clears the field);
/// it is registered for `redmodel::model::cascade`.
#[proc_macro_derive(Admin, attributes(redmodel))]
pub fn derive_admin(input: TokenStream) -> TokenStream {
    derive(input, Kind::Admin)
}

/// A sub-object model owned by an admin model: a hash at
/// `ADMIN_TABLE:ADMIN_PK:TABLE:PK` (`student:a:exam:2024`), or a string
/// with `single`.
///
/// Container attributes: `owner = Admin` (required), `table`, `single`,
/// `sync_every`. Field attributes as for `Admin`.
#[proc_macro_derive(SubObject, attributes(redmodel))]
pub fn derive_sub_object(input: TokenStream) -> TokenStream {
    derive(input, Kind::SubObject)
}

/// A relation owned by an admin model: a list of member keys at
/// `ADMIN_TABLE:ADMIN_PK:TABLE` (`teacher:A:class`). A unit struct.
///
/// Container attributes: `owner = Admin`, `member = Admin` (both
/// required), `table`, `inverse = OtherRelation`, `on_delete = "restrict"`
/// (refuse to delete a member still in a list) or `"cascade"` (the
/// default: the delete removes it from the lists). Each relation is
/// registered for `redmodel::model::cascade`.
#[proc_macro_derive(Relation, attributes(redmodel))]
pub fn derive_relation(input: TokenStream) -> TokenStream {
    derive(input, Kind::Relation)
}
