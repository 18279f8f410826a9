//! Parsing of `#[redmodel(...)]` (and the `default` of `#[serde(...)]`)
//! into spanned raw values. Which attribute fits which kind of model is
//! checked in [`crate::ast`]; here each attribute's own shape is checked.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::{Attribute, ExprPath, LitInt, LitStr, Path, Token};

/// Collects errors so that all of them are reported at once.
#[derive(Default)]
pub struct Errors(Vec<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    pub fn spanned(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    pub fn finish(self) -> syn::Result<()> {
        let mut errors = self.0.into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                first.extend(errors);
                Err(first)
            }
        }
    }
}

/// A flag attribute (`pk`, `skip`, ...), where it was written.
pub type Flag = Option<Span>;

/// The attributes of the struct itself.
#[derive(Default)]
pub struct ContainerAttrs {
    pub table: Option<LitStr>,
    pub owner: Option<Path>,
    pub member: Option<Path>,
    pub inverse: Option<Path>,
    pub sync_every: Option<LitInt>,
    pub single: Flag,
    pub on_delete: Option<OnDelete>,
}

/// `on_delete = "cascade"` or `on_delete = "restrict"`, where it was
/// written.
#[derive(Clone, Copy)]
pub struct OnDelete {
    pub restrict: bool,
    pub span: Span,
}

/// `default`, or `default = "path::to::fn"`.
pub enum DefaultAttr {
    Trait(Span),
    Function(ExprPath),
}

impl DefaultAttr {
    pub fn span(&self) -> Span {
        match self {
            DefaultAttr::Trait(span) => *span,
            DefaultAttr::Function(path) => syn::spanned::Spanned::span(path),
        }
    }
}

/// The attributes of one field.
#[derive(Default)]
pub struct FieldAttrs {
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
}

/// The container attribute names, for "expected one of" messages.
pub const CONTAINER_NAMES: &[&str] = &[
    "table",
    "owner",
    "member",
    "inverse",
    "sync_every",
    "single",
    "on_delete",
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
];

/// Parses `on_delete = "cascade" | "restrict"`.
fn on_delete(meta: &ParseNestedMeta) -> syn::Result<OnDelete> {
    let example = "on_delete = \"restrict\"";
    let lit = string(meta, example)?;
    let restrict = match lit.value().as_str() {
        "cascade" => false,
        "restrict" => true,
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!("unknown on_delete action `{other}`: write `on_delete = \"cascade\"` (the default) or `on_delete = \"restrict\"`"),
            ))
        }
    };
    Ok(OnDelete {
        restrict,
        span: meta.path_span(),
    })
}

fn name_of(meta: &ParseNestedMeta) -> String {
    let path = &meta.path;
    path.get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string().replace(' ', ""))
}

fn unknown(meta: &ParseNestedMeta, expected: &[&str]) -> syn::Error {
    let list = expected
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    meta.error(format!(
        "unknown redmodel attribute `{}`; expected one of {list}",
        name_of(meta)
    ))
}

fn duplicate(meta: &ParseNestedMeta) -> syn::Error {
    meta.error(format!(
        "duplicate `{}` attribute: give it once",
        name_of(meta)
    ))
}

/// Parses a flag: no value allowed.
fn flag(meta: &ParseNestedMeta, slot: &mut Flag) -> syn::Result<()> {
    if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        let name = name_of(meta);
        return Err(meta.error(format!(
            "`{name}` takes no value: write `#[redmodel({name})]`"
        )));
    }
    if slot.is_some() {
        return Err(duplicate(meta));
    }
    *slot = Some(meta.path_span());
    Ok(())
}

trait PathSpan {
    fn path_span(&self) -> Span;
}

impl PathSpan for ParseNestedMeta<'_> {
    fn path_span(&self) -> Span {
        syn::spanned::Spanned::span(&self.path)
    }
}

/// The value after `=`, or an error showing the expected form.
fn value<'a>(meta: &'a ParseNestedMeta, example: &str) -> syn::Result<ParseStream<'a>> {
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("write `{example}`")));
    }
    meta.value()
}

fn string(meta: &ParseNestedMeta, example: &str) -> syn::Result<LitStr> {
    let input = value(meta, example)?;
    input
        .parse::<LitStr>()
        .map_err(|e| syn::Error::new(e.span(), format!("expected a string: write `{example}`")))
}

fn model_path(meta: &ParseNestedMeta, example: &str) -> syn::Result<Path> {
    let input = value(meta, example)?;
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Err(syn::Error::new(
            lit.span(),
            format!("write the model's type, not a string: `{example}`"),
        ));
    }
    input.parse::<Path>().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!("expected a model type: write `{example}`"),
        )
    })
}

fn set<T>(meta: &ParseNestedMeta, slot: &mut Option<T>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(duplicate(meta));
    }
    *slot = Some(value);
    Ok(())
}

fn redmodel_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("redmodel"))
}

/// Parses the `#[redmodel(...)]` attributes of the struct.
pub fn container(attrs: &[Attribute], errors: &mut Errors) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    for attr in redmodel_attrs(attrs) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("table") {
                let lit = string(&meta, "table = \"teacher\"")?;
                set(&meta, &mut out.table, lit)
            } else if meta.path.is_ident("owner") {
                let path = model_path(&meta, "owner = Student")?;
                set(&meta, &mut out.owner, path)
            } else if meta.path.is_ident("member") {
                let path = model_path(&meta, "member = Class")?;
                set(&meta, &mut out.member, path)
            } else if meta.path.is_ident("inverse") {
                let path = model_path(&meta, "inverse = ClassTeachers")?;
                set(&meta, &mut out.inverse, path)
            } else if meta.path.is_ident("sync_every") {
                let example = "sync_every = 10";
                let input = value(&meta, example)?;
                let lit = input.parse::<LitInt>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        format!("expected a whole number of writes: write `{example}`"),
                    )
                })?;
                set(&meta, &mut out.sync_every, lit)
            } else if meta.path.is_ident("single") {
                flag(&meta, &mut out.single)
            } else if meta.path.is_ident("on_delete") {
                let parsed = on_delete(&meta)?;
                set(&meta, &mut out.on_delete, parsed)
            } else if FIELD_NAMES.iter().any(|n| meta.path.is_ident(n)) {
                Err(meta.error(format!(
                    "`{}` is a field attribute: put it on a field, not on the struct",
                    name_of(&meta)
                )))
            } else {
                Err(unknown(&meta, CONTAINER_NAMES))
            }
        });
        if let Err(e) = result {
            errors.push(e);
        }
    }
    out
}

/// Parses the `#[redmodel(...)]` attributes of a field, and the `default`
/// of its `#[serde(...)]` attributes.
pub fn field(attrs: &[Attribute], errors: &mut Errors) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in redmodel_attrs(attrs) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("pk") {
                flag(&meta, &mut out.pk)
            } else if meta.path.is_ident("skip") {
                flag(&meta, &mut out.skip)
            } else if meta.path.is_ident("json") {
                flag(&meta, &mut out.json)
            } else if meta.path.is_ident("rename") {
                let lit = string(&meta, "rename = \"stored_name\"")?;
                set(&meta, &mut out.rename, lit)
            } else if meta.path.is_ident("default") {
                let parsed = default_attr(&meta)?;
                set(&meta, &mut out.default, parsed)
            } else if meta.path.is_ident("unique") {
                flag(&meta, &mut out.unique)
            } else if meta.path.is_ident("sorted") {
                flag(&meta, &mut out.sorted)
            } else if meta.path.is_ident("tags") {
                flag(&meta, &mut out.tags)
            } else if meta.path.is_ident("recent") {
                let example = "recent = 10";
                let input = value(&meta, example)?;
                let lit = input.parse::<LitInt>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        format!("expected how many objects the list keeps: write `{example}`"),
                    )
                })?;
                set(&meta, &mut out.recent, lit)
            } else if meta.path.is_ident("on_delete") {
                let parsed = on_delete(&meta)?;
                set(&meta, &mut out.on_delete, parsed)
            } else if CONTAINER_NAMES.iter().any(|n| meta.path.is_ident(n)) {
                Err(meta.error(format!(
                    "`{}` is a struct attribute: put it on the struct, not on a field",
                    name_of(&meta)
                )))
            } else {
                Err(unknown(&meta, FIELD_NAMES))
            }
        });
        if let Err(e) = result {
            errors.push(e);
        }
    }
    if out.default.is_none() {
        out.default = serde_default(attrs);
    }
    out
}

fn default_attr(meta: &ParseNestedMeta) -> syn::Result<DefaultAttr> {
    if !meta.input.peek(Token![=]) {
        return Ok(DefaultAttr::Trait(meta.path_span()));
    }
    let lit: LitStr = meta.value()?.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "write `default` or `default = \"path::to::function\"`",
        )
    })?;
    lit.parse::<ExprPath>()
        .map(DefaultAttr::Function)
        .map_err(|_| {
            syn::Error::new(
                lit.span(),
                "expected the path of a function: `default = \"path::to::function\"`",
            )
        })
}

/// `#[serde(default)]` / `#[serde(default = "f")]` mean the same to us.
/// Other serde attributes are serde's business: anything we cannot read
/// is left to serde to report.
fn serde_default(attrs: &[Attribute]) -> Option<DefaultAttr> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                found = default_attr(&meta).ok();
                Ok(())
            } else {
                skip_meta(meta)
            }
        });
    }
    found
}

/// Consumes one serde attribute we do not read (`a`, `a = x`, `a(...)`).
fn skip_meta(meta: ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(skip_meta)?;
    }
    Ok(())
}
