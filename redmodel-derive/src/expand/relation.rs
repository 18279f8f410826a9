//! The code of `#[derive(Relation)]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::register::{declare, on_delete, register};
use crate::attr::Action;
use crate::model::{Model, Relation};

/// The code of a relation.
pub fn expand(model: &Model, relation: &Relation) -> TokenStream {
    let ident = model.ident;
    let table = &model.table;
    let owner = relation.owner;
    let member = relation.member;
    let owner = quote_spanned!(owner.span()=> #owner);
    let member = quote_spanned!(member.span()=> #member);
    let inverse = match relation.inverse {
        Some(path) => quote_spanned!(path.span()=> #path),
        None => quote!(::redmodel::__private::NoInverse),
    };
    let referrer = register(
        member.clone(),
        on_delete(if relation.restrict {
            Action::Restrict
        } else {
            Action::Cascade
        }),
        quote! {
            ::redmodel::__private::ReferrerKind::List {
                owner_table: <#owner as ::redmodel::__private::Model>::TABLE,
                table: #table,
            }
        },
    );
    let declared = declare(
        ident,
        "relation",
        quote!(::redmodel::__private::relation_namespace::<#ident>),
        quote!(::redmodel::__private::relation_checker::<#ident>),
    );
    quote! {
        #[automatically_derived]
        impl ::redmodel::__private::Relation for #ident {
            type Owner = #owner;
            type Member = #member;
            type Inverse = #inverse;
            const TABLE: &'static str = #table;
        }
        #referrer
        #declared
    }
}
