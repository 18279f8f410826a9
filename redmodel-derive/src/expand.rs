//! Code generation from a validated [`Model`]. Generated code names the
//! runtime only as `::redmodel::__private::...`, so it works whatever the
//! user has imported.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Body, DataField, IndexKind, Model, Object, Relation};
use crate::attr::DefaultAttr;

pub fn expand(model: &Model) -> TokenStream {
    match &model.body {
        Body::Object(object) => expand_object(model, object),
        Body::Relation(relation) => expand_relation(model, relation),
    }
}

/// The field's codec type, spanned at the field's type so that errors
/// about the type and its codec point there.
fn codec(field: &DataField) -> TokenStream {
    let span = field.ty().span();
    if field.json {
        quote_spanned!(span=> ::redmodel::__private::Json)
    } else {
        quote_spanned!(span=> ::redmodel::__private::Plain)
    }
}

/// A check, at the field's type, that the type fits its codec (its error
/// message says what to do otherwise), whose value says whether the field
/// is always stored. (A sorted or tags field's type is checked by its
/// index's functions in `INDEXES`, at the same span.)
fn type_check(field: &DataField) -> TokenStream {
    let ty = field.ty();
    if field.json {
        quote_spanned!(ty.span()=> ::redmodel::__private::json_field::<#ty>())
    } else {
        quote_spanned!(ty.span()=> ::redmodel::__private::plain_field::<#ty>())
    }
}

/// The `IndexSpec`s of the model's indexes, in field order.
fn index_specs(fields: &[DataField]) -> TokenStream {
    let specs = fields.iter().flat_map(|f| {
        let (name, ty, codec) = (&f.name, f.ty(), codec(f));
        f.indexes.iter().map(move |index| {
            let kind = match index.kind {
                IndexKind::Unique => quote!(::redmodel::__private::IndexKind::Unique),
                IndexKind::Sorted => quote_spanned!(ty.span()=>
                    ::redmodel::__private::IndexKind::Sorted {
                        score: ::redmodel::__private::score_of::<#ty, #codec>,
                    }
                ),
                IndexKind::Tags => quote_spanned!(ty.span()=>
                    ::redmodel::__private::IndexKind::Tags {
                        tags: ::redmodel::__private::tags_of::<#ty>,
                    }
                ),
                IndexKind::Recent(cap) => {
                    quote!(::redmodel::__private::IndexKind::Recent { cap: #cap })
                }
            };
            quote! {
                ::redmodel::__private::IndexSpec { field: #name, kind: #kind },
            }
        })
    });
    quote!(&[#(#specs)*])
}

fn default_fn(field: &DataField) -> TokenStream {
    let ty = field.ty();
    match &field.default {
        None => quote!(::redmodel::__private::None),
        Some(DefaultAttr::Trait(span)) => quote_spanned!(*span=>
            ::redmodel::__private::Some(<#ty as ::redmodel::__private::Default>::default as fn() -> #ty)
        ),
        Some(DefaultAttr::Function(path)) => quote_spanned!(path.span()=>
            ::redmodel::__private::Some(#path as fn() -> #ty)
        ),
    }
}

fn expand_object(model: &Model, object: &Object) -> TokenStream {
    let ident = model.ident;
    let table = &model.table;
    let pk_ident = &object.pk.ident;
    let pk_ty = &object.pk.ty;
    let sync_every = object.sync_every;
    let names: Vec<&String> = object.fields.iter().map(|f| &f.name).collect();
    let references: Vec<&String> = object
        .fields
        .iter()
        .filter(|f| f.ref_target.is_some())
        .map(|f| &f.name)
        .collect();

    let owner = match &object.owner {
        Some(path) => quote_spanned!(path.span()=> #path),
        None => quote!(::redmodel::__private::NoOwner),
    };
    let owner_check = object.owner.as_ref().map(|path| {
        quote_spanned!(path.span()=> const _: () = ::redmodel::__private::assert_admin::<#path>();)
    });
    let storage = if object.single {
        quote!(::redmodel::__private::Storage::Single)
    } else {
        quote!(::redmodel::__private::Storage::Hash)
    };

    let type_checks = object.fields.iter().map(type_check);
    let encodes = object.fields.iter().map(|f| {
        let (field, name, ty, codec) = (f.ident, &f.name, f.ty(), codec(f));
        // Spanned at the field's type, so that a type that does not fit
        // its codec is reported there, with the check of `type_check`.
        quote_spanned! {ty.span()=>
            __values.push(::redmodel::__private::encode_field::<#ty, #codec>(__key, #name, &self.#field)?);
        }
    });
    let decodes = object.fields.iter().map(|f| {
        let (field, name, ty, codec, default) = (f.ident, &f.name, f.ty(), codec(f), default_fn(f));
        quote_spanned! {ty.span()=>
            #field: ::redmodel::__private::decode_field::<#ty, #codec>(__key, #name, __values.next(), #default)?,
        }
    });
    let skipped = object.skipped.iter().map(|f| {
        let field = &f.ident;
        let ty = &f.ty;
        quote_spanned!(f.ty.span()=> #field: <#ty as ::redmodel::__private::Default>::default(),)
    });
    let field_count = object.fields.len();
    let indexes = index_specs(&object.fields);
    let referrers = if object.single {
        Vec::new()
    } else {
        field_referrers(ident, &object.fields)
    };

    let kind_impl = match &object.owner {
        None => quote! {
            #[automatically_derived]
            impl ::redmodel::__private::Admin for #ident {}
        },
        Some(_) => quote!(),
    };
    let single_impl = if object.single {
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
    } else {
        None
    };
    let handles = if object.single {
        quote!()
    } else {
        field_handles(ident, &object.fields)
    };

    let declared = declare(
        ident,
        "model",
        quote!(::redmodel::__private::model_namespace::<#ident>),
        quote!(::redmodel::__private::model_checker::<#ident>),
    );
    quote! {
        const _: () = {
            #owner_check

            #[automatically_derived]
            impl ::redmodel::__private::Model for #ident {
                type Pk = #pk_ty;
                type Owner = #owner;
                const TABLE: &'static str = #table;
                const FIELDS: &'static [&'static str] = &[#(#names),*];
                const STORAGE: ::redmodel::__private::Storage = #storage;
                const SYNC_EVERY: u64 = #sync_every;
                const INDEXES: &'static [::redmodel::__private::IndexSpec] = #indexes;
                const REFERENCES: &'static [&'static str] = &[#(#references),*];
                // The fields' type checks, which tell whether one is
                // always stored.
                const ALWAYS_HOLDS_A_FIELD: bool = false #(|| #type_checks)*;

                fn pk(&self) -> &Self::Pk {
                    &self.#pk_ident
                }

                fn encode_fields(
                    &self,
                    __key: &str,
                ) -> ::redmodel::__private::Result<::redmodel::__private::Vec<::redmodel::__private::Option<::redmodel::__private::Vec<u8>>>> {
                    let mut __values = ::redmodel::__private::Vec::with_capacity(#field_count);
                    #(#encodes)*
                    ::redmodel::__private::Ok(__values)
                }

                fn decode_fields(
                    __key: &str,
                    __pk: Self::Pk,
                    __values: ::redmodel::__private::Vec<::redmodel::__private::Option<::redmodel::__private::Vec<u8>>>,
                ) -> ::redmodel::__private::Result<Self> {
                    let mut __values = __values.into_iter();
                    ::redmodel::__private::Ok(#ident {
                        #pk_ident: __pk,
                        #(#decodes)*
                        #(#skipped)*
                    })
                }
            }

            #kind_impl
            #single_impl
        };

        #handles
        #(#referrers)*
        #declared
    }
}

/// Registers a model or relation at program start, with its keys (see
/// `redmodel::model::declared`).
fn declare(ident: &Ident, kind: &str, namespace: TokenStream, checker: TokenStream) -> TokenStream {
    quote! {
        ::redmodel::__private::inventory::submit! {
            ::redmodel::__private::Declared {
                rust_name: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#ident)),
                kind: #kind,
                namespace: #namespace,
                checker: #checker,
            }
        }
    }
}

/// Registers a referrer at program start (see `redmodel::model::cascade`).
fn register(target: TokenStream, restrict: bool, kind: TokenStream) -> TokenStream {
    let on_delete = if restrict {
        quote!(::redmodel::__private::OnDelete::Restrict)
    } else {
        quote!(::redmodel::__private::OnDelete::Cascade)
    };
    quote! {
        ::redmodel::__private::inventory::submit! {
            ::redmodel::__private::Referrer {
                target: <#target as ::redmodel::__private::Model>::TABLE,
                on_delete: #on_delete,
                kind: #kind,
            }
        }
    }
}

/// The referrer registrations of a model's reference fields.
fn field_referrers(ident: &Ident, fields: &[DataField]) -> Vec<TokenStream> {
    fields
        .iter()
        .filter_map(|f| {
            let target = f.ref_target.as_ref()?;
            let name = &f.name;
            let target = quote_spanned!(target.span()=> #target);
            Some(register(
                target,
                f.restrict,
                quote! {
                    ::redmodel::__private::ReferrerKind::Field {
                        field: #name,
                        pattern: ::redmodel::__private::object_pattern::<#ident>,
                        is_object: ::redmodel::__private::is_object_of::<#ident>,
                    }
                },
            ))
        })
        .collect()
}

/// `pub const NAME: Field<Teacher, String, Plain> = Field::new("name");`
/// per stored field, with the field's visibility.
fn field_handles(ident: &Ident, fields: &[DataField]) -> TokenStream {
    if fields.is_empty() {
        return quote!();
    }
    let consts = fields.iter().map(|f| {
        let (vis, ty, name, codec) = (f.vis(), f.ty(), &f.name, codec(f));
        let rust_name = f.ident.to_string();
        let rust_name = rust_name.strip_prefix("r#").unwrap_or(&rust_name);
        let handle = f.handle_name();
        let constant = format_ident!("{}", handle, span = f.ident.span());
        let doc =
            format!("The field `{rust_name}` (hash field `{name}`), for typed reads and writes.");
        let indexes = f.indexes.iter().map(|index| {
            let constant = format_ident!("{}", index.handle_name(&handle), span = index.span);
            let (doc, ty) = match index.kind {
                IndexKind::Unique => (
                    format!("The unique index on `{rust_name}`: find an object by its `{rust_name}`."),
                    quote!(::redmodel::__private::UniqueIndex<#ident, #ty, #codec>),
                ),
                IndexKind::Sorted => (
                    format!("The sorted index on `{rust_name}`: top, bottom, rank, score ranges."),
                    quote!(::redmodel::__private::SortedIndex<#ident, #ty>),
                ),
                IndexKind::Tags => (
                    format!("The tag index on `{rust_name}`: objects by tag, intersections, unions, differences."),
                    quote!(::redmodel::__private::TagIndex<#ident, #ty>),
                ),
                IndexKind::Recent(cap) => (
                    format!("The {cap} objects whose `{rust_name}` was written last, newest first."),
                    quote!(::redmodel::__private::RecentList<#ident>),
                ),
            };
            let init = match index.kind {
                IndexKind::Unique => quote!(::redmodel::__private::UniqueIndex::new(#name)),
                IndexKind::Sorted => quote!(::redmodel::__private::SortedIndex::new(#name)),
                IndexKind::Tags => quote!(::redmodel::__private::TagIndex::new(#name)),
                IndexKind::Recent(cap) => quote!(::redmodel::__private::RecentList::new(#name, #cap)),
            };
            quote! {
                #[doc = #doc]
                #vis const #constant: #ty = #init;
            }
        });
        quote! {
            #[doc = #doc]
            #vis const #constant: ::redmodel::__private::Field<#ident, #ty, #codec> =
                ::redmodel::__private::Field::new(#name);
            #(#indexes)*
        }
    });
    quote! {
        #[automatically_derived]
        #[allow(dead_code)]
        impl #ident {
            #(#consts)*
        }
    }
}

fn expand_relation(model: &Model, relation: &Relation) -> TokenStream {
    let ident = model.ident;
    let table = &model.table;
    let owner = &relation.owner;
    let member = &relation.member;
    let owner = quote_spanned!(owner.span()=> #owner);
    let member = quote_spanned!(member.span()=> #member);
    let inverse = match &relation.inverse {
        Some(path) => quote_spanned!(path.span()=> #path),
        None => quote!(::redmodel::__private::NoInverse),
    };
    let referrer = register(
        member.clone(),
        relation.restrict,
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
