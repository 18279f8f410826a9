//! Derive macros of redmodel: `#[derive(Admin)]`, `#[derive(SubObject)]`
//! and `#[derive(Relation)]`. See `redmodel::model` for what they generate
//! and the attributes they take.
//!
//! Built like serde_derive, in four steps:
//! 1. `ast`: the input and its attributes (`attr`) parsed into an internal
//!    representation;
//! 2. `check`: the rules, one function each, with errors that point at the
//!    user's tokens and say what to write instead, all collected in a
//!    `ctxt::Ctxt` and reported at once, in source order;
//! 3. `model`: the checked input as what the derive generates code for;
//! 4. `expand`: the code, which names the runtime only through
//!    `::redmodel::__private`.

#![warn(missing_docs)]

mod ast;
mod attr;
mod check;
mod ctxt;
mod duration;
mod expand;
mod model;
mod name;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

use crate::ctxt::Ctxt;

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
    derive_tokens(&input, kind)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The code of a derive: parse, check every rule, generate.
fn derive_tokens(input: &DeriveInput, kind: Kind) -> syn::Result<proc_macro2::TokenStream> {
    let cx = Ctxt::new();
    let cont = ast::Container::from_ast(&cx, input, kind);
    check::check(&cx, &cont);
    cx.check()?;
    let model = model::Model::from_checked(&cont)
        .ok_or_else(|| syn::Error::new(proc_macro2::Span::call_site(), "invalid model"))?;
    Ok(expand::expand(&model))
}

/// An admin model: a struct stored as a hash at `TABLE:PK` (`teacher:A`).
///
/// Container attributes: `#[redmodel(table = "teacher")]` (default: the
/// struct's name in snake_case), `#[redmodel(sync_every = 10)]`,
/// `#[redmodel(slot_group = "shop")]` (on Redis Cluster, the objects,
/// their sub-objects and relation lists hash to the slot of `{shop}`,
/// shared with the other models of the group: see `redmodel::KeyLayout`).
/// Field attributes: `pk` (exactly one field), `rename = "name"`, `skip`,
/// `json`, `default` / `default = "path::to::fn"`, and the indexes kept in
/// step with every write: `unique`, `sorted`, `tags`, `recent = N` (see
/// `redmodel::model::index`). Each index adds a handle next to the field's
/// (`NAME_UNIQUE`, `LOGINS_SORTED`, `TAGS_TAGS`, `LAST_LOGIN_RECENT`).
/// A reference field (`Ref<M>`, `Option<Ref<M>>`) takes
/// `on_delete = "restrict"` (refuse to delete `M`'s object while the field
/// points at it: the default of `Ref<M>`), `"clear"` (the delete removes
/// the field: the default of `Option<Ref<M>>`, and a compile error on a
/// required `Ref<M>`) or `"delete"` (the delete deletes this object
/// first); it is registered for `redmodel::model::cascade`.
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
