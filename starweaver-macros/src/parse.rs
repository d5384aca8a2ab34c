//! Tokens into raw attribute values. Unknown, malformed or repeated keys are recorded in
//! the [`Ctxt`] and otherwise ignored, so parsing never stops at the first mistake.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, LitBool, LitInt, LitStr, Path};

use crate::ctxt::Ctxt;
use crate::symbol::{
    self, ARG, ARG_KEYS, CRATE, DEFAULT, DESCRIPTION, MAX_RETRIES, METADATA, NAME, PARAMETERS_SCHEMA, SEQUENTIAL,
    STRICT, Symbol, TIMEOUT_MS, TOOL_KEYS,
};

/// One attribute value, remembering the tokens it was given with for later errors.
pub(crate) struct Attr<T> {
    key: Symbol,
    scope: &'static str,
    value: Option<T>,
}

impl<T> Attr<T> {
    fn none(key: Symbol, scope: &'static str) -> Self {
        Self { key, scope, value: None }
    }

    fn set(&mut self, cx: &Ctxt, tokens: impl ToTokens, value: T) {
        if self.value.is_some() {
            cx.error_spanned_by(tokens, format!("duplicate `{}` argument `{}`", self.scope, self.key));
        } else {
            self.value = Some(value);
        }
    }

    pub(crate) fn get(self) -> Option<T> {
        self.value
    }
}

/// The raw `#[tool(...)]` arguments.
pub(crate) struct ToolArgs {
    pub name: Attr<LitStr>,
    pub description: Attr<LitStr>,
    pub strict: Attr<LitBool>,
    pub sequential: Attr<LitBool>,
    pub timeout_ms: Attr<LitInt>,
    pub max_retries: Attr<LitInt>,
    pub metadata: Attr<LitStr>,
    pub parameters_schema: Attr<LitStr>,
    pub krate: Attr<Path>,
}

const TOOL: &str = "#[tool]";

/// Near misses users type, with the key they meant.
const HINTS: &[(&str, Symbol)] = &[
    ("desc", DESCRIPTION),
    ("descr", DESCRIPTION),
    ("doc", DESCRIPTION),
    ("timeout", TIMEOUT_MS),
    ("timeout_secs", TIMEOUT_MS),
    ("retries", MAX_RETRIES),
    ("max_retry", MAX_RETRIES),
    ("schema", PARAMETERS_SCHEMA),
    ("parameters", PARAMETERS_SCHEMA),
    ("meta", METADATA),
];

pub(crate) fn tool_args(cx: &Ctxt, tokens: TokenStream) -> ToolArgs {
    let mut args = ToolArgs {
        name: Attr::none(NAME, TOOL),
        description: Attr::none(DESCRIPTION, TOOL),
        strict: Attr::none(STRICT, TOOL),
        sequential: Attr::none(SEQUENTIAL, TOOL),
        timeout_ms: Attr::none(TIMEOUT_MS, TOOL),
        max_retries: Attr::none(MAX_RETRIES, TOOL),
        metadata: Attr::none(METADATA, TOOL),
        parameters_schema: Attr::none(PARAMETERS_SCHEMA, TOOL),
        krate: Attr::none(CRATE, TOOL),
    };
    let parser = syn::meta::parser(|meta| {
        let path = meta.path.clone();
        if path == NAME {
            args.name.set(cx, &path, meta.value()?.parse()?);
        } else if path == DESCRIPTION {
            args.description.set(cx, &path, meta.value()?.parse()?);
        } else if path == STRICT {
            args.strict.set(cx, &path, flag(&meta)?);
        } else if path == SEQUENTIAL {
            args.sequential.set(cx, &path, flag(&meta)?);
        } else if path == TIMEOUT_MS {
            args.timeout_ms.set(cx, &path, meta.value()?.parse()?);
        } else if path == MAX_RETRIES {
            args.max_retries.set(cx, &path, meta.value()?.parse()?);
        } else if path == METADATA {
            args.metadata.set(cx, &path, meta.value()?.parse()?);
        } else if path == PARAMETERS_SCHEMA {
            args.parameters_schema.set(cx, &path, meta.value()?.parse()?);
        } else if path == CRATE {
            let lit: LitStr = meta.value()?.parse()?;
            args.krate.set(cx, &path, lit.parse()?);
        } else {
            unknown(cx, &meta, TOOL, TOOL_KEYS)?;
        }
        Ok(())
    });
    if let Err(err) = parser.parse2(tokens) {
        cx.syn_error(err);
    }
    args
}

/// `key` alone means `true`; `key = true|false` says so.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<LitBool> {
    if meta.input.peek(syn::Token![=]) { meta.value()?.parse() } else { Ok(LitBool::new(true, meta.path.span())) }
}

fn unknown(cx: &Ctxt, meta: &ParseNestedMeta<'_>, scope: &str, keys: &[Symbol]) -> syn::Result<()> {
    let key = meta.path.to_token_stream().to_string().replace(' ', "");
    let hint = HINTS
        .iter()
        .find(|(miss, _)| *miss == key)
        .map(|(_, meant)| format!("; did you mean `{meant}`?"))
        .unwrap_or_default();
    cx.error_spanned_by(
        &meta.path,
        format!("unknown `{scope}` argument `{key}`; expected one of {}{hint}", symbol::list(keys)),
    );
    // Skip the value so the remaining keys are still read.
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| {
            if inner.input.peek(syn::Token![=]) {
                inner.value()?.parse::<Expr>()?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// A parameter's default: `#[arg(default)]` (the type's `Default`) or `#[arg(default = expr)]`.
pub(crate) enum ArgDefault {
    Trait(Span),
    Expr(Box<Expr>),
}

/// The raw `#[arg(...)]` of one parameter.
pub(crate) struct ArgAttrs {
    pub description: Attr<LitStr>,
    pub default: Attr<ArgDefault>,
}

const ARG_SCOPE: &str = "#[arg]";

pub(crate) fn arg_attrs(cx: &Ctxt, attrs: &[Attribute]) -> ArgAttrs {
    let mut out = ArgAttrs { description: Attr::none(DESCRIPTION, ARG_SCOPE), default: Attr::none(DEFAULT, ARG_SCOPE) };
    for attr in attrs.iter().filter(|a| a.path() == &ARG) {
        let parsed = attr.parse_nested_meta(|meta| {
            let path = meta.path.clone();
            if path == DESCRIPTION {
                out.description.set(cx, &path, meta.value()?.parse()?);
            } else if path == DEFAULT {
                let default = if meta.input.peek(syn::Token![=]) {
                    ArgDefault::Expr(Box::new(meta.value()?.parse()?))
                } else {
                    ArgDefault::Trait(path.span())
                };
                out.default.set(cx, &path, default);
            } else {
                unknown(cx, &meta, ARG_SCOPE, ARG_KEYS)?;
            }
            Ok(())
        });
        if let Err(err) = parsed {
            cx.syn_error(err);
        }
    }
    out
}

/// Whether an attribute is ours to strip before re-emitting the function.
pub(crate) fn is_helper(attr: &Attribute) -> bool {
    attr.path() == &ARG || attr.path().is_ident("doc")
}
