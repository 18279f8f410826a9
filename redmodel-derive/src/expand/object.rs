//! The code of `#[derive(Admin)]` and `#[derive(SubObject)]`.

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::codec;
use super::fields::{decode_fields, encode_fields, index_specs, type_check};
use super::handles::field_handles;
use super::register::{declare, field_referrers, on_delete, table_group};
use crate::model::{DataField, Model, Object};

/// The code of an admin or sub-object model.
pub fn expand(model: &Model, object: &Object) -> TokenStream {
    let ident = model.ident;
    let owner_check = object.owner.map(|path| {
        quote_spanned!(path.span()=> const _: () = ::redmodel::__private::assert_admin::<#path>();)
    });
    let model_impl = model_impl(model, object);
    let kind_impl = kind_impl(ident, object);
    let single_impl = single_impl(ident, object);
    let (handles, referrers) = if object.single {
        (quote!(), Vec::new())
    } else {
        (
            field_handles(ident, &object.fields),
            field_referrers(ident, object.owner.is_none(), &object.fields),
        )
    };
    let declared = declare(
        ident,
        "model",
        quote!(::redmodel::__private::model_namespace::<#ident>),
        quote!(::redmodel::__private::model_checker::<#ident>),
    );
    let table_group = table_group(ident, object);
    quote! {
        const _: () = {
            #owner_check

            #model_impl

            #kind_impl
            #single_impl
        };

        #handles
        #(#referrers)*
        #declared
        #table_group
    }
}

/// `impl Model for ...`.
fn model_impl(model: &Model, object: &Object) -> TokenStream {
    let (ident, table) = (model.ident, &model.table);
    let (pk_ident, pk_ty) = (&object.pk.ident, &object.pk.ty);
    let sync_every = object.sync_every;
    let ttl = match object.ttl {
        Some(ms) => quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms))),
        None => quote!(::core::option::Option::None),
    };
    let field_ttls = object.fields.iter().filter_map(|f| {
        let (name, ms) = (&f.name, f.ttl?);
        Some(quote!((#name, ::core::time::Duration::from_millis(#ms))))
    });
    let names = object.fields.iter().map(|f| &f.name);
    let references = object.fields.iter().filter_map(reference);
    let owner = match object.owner {
        Some(path) => quote_spanned!(path.span()=> #path),
        None => quote!(::redmodel::__private::NoOwner),
    };
    let storage = if object.single {
        quote!(::redmodel::__private::Storage::Single)
    } else {
        quote!(::redmodel::__private::Storage::Hash)
    };
    let slot_group = match (object.owner, &object.slot_group) {
        // A sub-object's keys are under its admin's: its group is the
        // admin's.
        (Some(owner), _) => {
            quote_spanned!(owner.span()=> <#owner as ::redmodel::__private::Model>::SLOT_GROUP)
        }
        (None, Some(group)) => quote!(::core::option::Option::Some(#group)),
        (None, None) => quote!(::core::option::Option::None),
    };
    let type_checks = object.fields.iter().map(type_check);
    let indexes = index_specs(&object.fields);
    let encode_fields = encode_fields(object);
    let decode_fields = decode_fields(ident, object);
    quote! {
        #[automatically_derived]
        impl ::redmodel::__private::Model for #ident {
            type Pk = #pk_ty;
            type Owner = #owner;
            const TABLE: &'static str = #table;
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            const STORAGE: ::redmodel::__private::Storage = #storage;
            const SYNC_EVERY: u64 = #sync_every;
            const TTL: ::core::option::Option<::core::time::Duration> = #ttl;
            const FIELD_TTLS: &'static [(&'static str, ::core::time::Duration)] = &[#(#field_ttls),*];
            const INDEXES: &'static [::redmodel::__private::IndexSpec] = #indexes;
            const REFERENCES: &'static [::redmodel::__private::Reference] = &[#(#references),*];
            const SLOT_GROUP: ::core::option::Option<&'static str> = #slot_group;
            // The fields' type checks, which tell whether one is
            // always stored.
            const ALWAYS_HOLDS_A_FIELD: bool = false #(|| #type_checks)*;

            fn pk(&self) -> &Self::Pk {
                &self.#pk_ident
            }

            #encode_fields

            #decode_fields
        }
    }
}

/// A reference field's entry in `Model::REFERENCES`.
fn reference(field: &DataField) -> Option<TokenStream> {
    let target = field.ref_target.as_ref()?;
    let target = quote_spanned!(target.span()=> #target);
    let (name, required) = (&field.name, field.required);
    let on_delete = on_delete(field.on_delete?);
    Some(quote! {
        ::redmodel::__private::Reference {
            field: #name,
            on_delete: #on_delete,
            required: #required,
            target: <#target as ::redmodel::__private::Model>::STORAGE,
        }
    })
}

/// `impl Admin for ...` for an admin model.
fn kind_impl(ident: &Ident, object: &Object) -> TokenStream {
    match object.owner {
        None => quote! {
            #[automatically_derived]
            impl ::redmodel::__private::Admin for #ident {}
        },
        Some(_) => quote!(),
    }
}

/// `impl SingleValue for ...` for a `single` sub-object.
fn single_impl(ident: &Ident, object: &Object) -> Option<TokenStream> {
    if !object.single {
        return None;
    }
    object.fields.first().map(|f| {
        let (ty, codec) = (f.ty(), codec(f));
        quote! {
            #[automatically_derived]
            impl ::redmodel::__private::SingleValue for #ident {
                type Value = #ty;
                type Codec = #codec;
            }
        }
    })
}
