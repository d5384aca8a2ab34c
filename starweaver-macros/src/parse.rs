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
    self, ARG, ARG_KEYS, DEFAULT, DESCRIPTION, Kind, MAX_RETRIES, METADATA, PARAMETERS_SCHEMA, RETURN_SCHEMA, Symbol,
    TIMEOUT_MS, TOOL_KEYS,
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
            duplicate(cx, tokens, self.scope, self.key);
        } else {
            self.value = Some(value);
        }
    }

    pub(crate) fn get(self) -> Option<T> {
        self.value
    }
}

fn duplicate(cx: &Ctxt, tokens: impl ToTokens, scope: &str, key: Symbol) {
    cx.error_spanned_by(tokens, format!("duplicate `{scope}` argument `{key}`"));
}

/// A `#[tool(...)]` value, read as its key's [`Kind`] says.
pub(crate) enum Value {
    Str(LitStr),
    Flag(LitBool),
    Int(LitInt),
    /// A concurrency limit of 1 or more.
    Limit(LitInt),
    /// The literal, holding a JSON object.
    Json(LitStr),
    Path(Path),
}

impl Value {
    pub(crate) fn as_str(&self) -> Option<&LitStr> {
        match self {
            Self::Str(lit) => Some(lit),
            _ => None,
        }
    }

    pub(crate) fn as_flag(&self) -> Option<&LitBool> {
        match self {
            Self::Flag(lit) => Some(lit),
            _ => None,
        }
    }
}

/// The raw `#[tool(...)]` arguments, each key at most once, in the order given.
pub(crate) struct ToolArgs {
    given: Vec<(Symbol, Value)>,
}

impl ToolArgs {
    /// Removes and returns the value of `key`.
    pub(crate) fn take(&mut self, key: Symbol) -> Option<Value> {
        let index = self.given.iter().position(|(k, _)| *k == key)?;
        Some(self.given.remove(index).1)
    }

    /// What is left after the `take`s.
    pub(crate) fn into_rest(self) -> Vec<(Symbol, Value)> {
        self.given
    }
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
    ("output_schema", RETURN_SCHEMA),
    ("returns", RETURN_SCHEMA),
];

pub(crate) fn tool_args(cx: &Ctxt, tokens: TokenStream) -> ToolArgs {
    let mut args = ToolArgs { given: Vec::new() };
    let parser = syn::meta::parser(|meta| {
        let Some(&(key, kind)) = TOOL_KEYS.iter().find(|(key, _)| meta.path == *key) else {
            return unknown(cx, &meta, TOOL, TOOL_KEYS.iter().map(|(key, _)| *key));
        };
        let value = value(cx, &meta, kind)?;
        if args.given.iter().any(|(k, _)| *k == key) {
            duplicate(cx, &meta.path, TOOL, key);
        } else if let Some(value) = value {
            args.given.push((key, value));
        }
        Ok(())
    });
    if let Err(err) = parser.parse2(tokens) {
        cx.syn_error(err);
    }
    args
}

/// Reads the value `kind` says; `None` (with the error recorded) when it is the right
/// token but not a usable value.
fn value(cx: &Ctxt, meta: &ParseNestedMeta<'_>, kind: Kind) -> syn::Result<Option<Value>> {
    // `key = r#"{...}"#` reads as JSON; `key` or `key = true|false` as a flag.
    let kind = match kind {
        Kind::JsonOrFlag if meta.input.peek(syn::Token![=]) && !meta.input.peek2(LitBool) => Kind::Json,
        Kind::JsonOrFlag => Kind::Flag,
        other => other,
    };
    Ok(Some(match kind {
        Kind::Str => Value::Str(meta.value()?.parse()?),
        Kind::Flag | Kind::JsonOrFlag => Value::Flag(flag(meta)?),
        Kind::Int => Value::Int(meta.value()?.parse()?),
        Kind::Limit => {
            let lit: LitInt = meta.value()?.parse()?;
            if !matches!(lit.base10_parse::<u32>(), Ok(1..)) {
                cx.error_spanned_by(&lit, "expected a number of calls from 1 to 4294967295");
                return Ok(None);
            }
            Value::Limit(lit)
        }
        Kind::Json => {
            let lit: LitStr = meta.value()?.parse()?;
            if !is_json_object(cx, &lit) {
                return Ok(None);
            }
            Value::Json(lit)
        }
        Kind::Path => Value::Path(meta.value()?.parse::<LitStr>()?.parse()?),
    }))
}

/// Whether `lit` holds a JSON object; if not, the error says what it holds.
fn is_json_object(cx: &Ctxt, lit: &LitStr) -> bool {
    match serde_json::from_str::<serde_json::Value>(&lit.value()) {
        Ok(serde_json::Value::Object(_)) => true,
        Ok(other) => {
            cx.error_spanned_by(lit, format!("expected a JSON object (`r#\"{{...}}\"#`), got `{other}`"));
            false
        }
        Err(err) => {
            cx.error_spanned_by(lit, format!("invalid JSON: {err}"));
            false
        }
    }
}

/// `key` alone means `true`; `key = true|false` says so.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<LitBool> {
    if meta.input.peek(syn::Token![=]) { meta.value()?.parse() } else { Ok(LitBool::new(true, meta.path.span())) }
}

fn unknown(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    scope: &str,
    keys: impl IntoIterator<Item = Symbol>,
) -> syn::Result<()> {
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
                unknown(cx, &meta, ARG_SCOPE, ARG_KEYS.iter().copied())?;
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
