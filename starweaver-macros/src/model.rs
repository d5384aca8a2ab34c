//! The parsed `#[tool]` function: what later stages read. Built without failing; problems
//! go to the [`Ctxt`] and the model holds a usable best guess.

use proc_macro2::Span;
use syn::{FnArg, Ident, ItemFn, LitStr, Pat, Path, ReturnType, Type};

use crate::ctxt::Ctxt;
use crate::doc::{self, Description};
use crate::parse::{self, ArgDefault, ToolArgs};

/// A `#[tool]` function.
pub(crate) struct ToolFn<'a> {
    pub original: &'a ItemFn,
    pub krate: Path,
    /// The tool name, and the tokens to blame when it is invalid.
    pub name: (String, Span),
    pub description: Option<Description>,
    pub strict: Option<syn::LitBool>,
    pub sequential: bool,
    pub timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
    /// JSON text, checked to be an object.
    pub metadata: Option<String>,
    /// JSON text, checked to be JSON.
    pub parameters_schema: Option<String>,
    pub context: Option<Context>,
    pub params: Vec<Param<'a>>,
    pub output: Output<'a>,
}

/// How the function takes its `ToolContext`.
pub(crate) struct Context {
    pub by_ref: bool,
}

/// A business parameter.
pub(crate) struct Param<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub description: Option<Description>,
    pub default: Option<ArgDefault>,
}

/// What the function returns, read off the syntax.
pub(crate) enum Output<'a> {
    /// `-> Result<..>` (any `Result`-named type): `Err` converts into `ToolError`.
    Fallible(&'a Type),
    /// Any other type (or none, which is `()`).
    Plain(Option<&'a Type>),
}

impl<'a> ToolFn<'a> {
    pub(crate) fn from_ast(cx: &Ctxt, item: &'a ItemFn, args: ToolArgs) -> Self {
        let ToolArgs {
            name,
            description,
            strict,
            sequential,
            timeout_ms,
            max_retries,
            metadata,
            parameters_schema,
            krate,
        } = args;
        let ident = &item.sig.ident;
        let name = match name.get() {
            Some(lit) => (lit.value(), lit.span()),
            None => (ident.to_string().trim_start_matches("r#").to_owned(), ident.span()),
        };
        let (context, params) = Self::inputs(cx, item);
        Self {
            original: item,
            krate: krate.get().unwrap_or_else(|| syn::parse_quote!(::starweaver)),
            name,
            description: description.get().map(|d| d.value().into()).or_else(|| doc::description(&item.attrs)),
            strict: strict.get(),
            sequential: sequential.get().is_some_and(|b| b.value),
            timeout_ms: timeout_ms.get().and_then(|lit| int(cx, &lit)),
            max_retries: max_retries.get().and_then(|lit| int(cx, &lit)),
            metadata: metadata.get().and_then(|lit| json_object(cx, &lit)),
            parameters_schema: parameters_schema.get().and_then(|lit| json_object(cx, &lit)),
            context,
            params,
            output: match &item.sig.output {
                ReturnType::Default => Output::Plain(None),
                ReturnType::Type(_, ty) if is_result(ty) => Output::Fallible(ty),
                ReturnType::Type(_, ty) => Output::Plain(Some(ty)),
            },
        }
    }

    /// Splits the inputs into the context (if the first parameter is one) and business
    /// parameters. Shape errors (receivers, patterns, misplaced contexts) are for
    /// `validate`; here every input is read as well as it can be.
    fn inputs(cx: &Ctxt, item: &'a ItemFn) -> (Option<Context>, Vec<Param<'a>>) {
        let mut context = None;
        let mut params = Vec::new();
        for (i, input) in item.sig.inputs.iter().enumerate() {
            let FnArg::Typed(pat_type) = input else { continue };
            if let Some(by_ref) = context_type(&pat_type.ty) {
                if i == 0 {
                    context = Some(Context { by_ref });
                }
                continue;
            }
            let Pat::Ident(pat) = &*pat_type.pat else { continue };
            let attrs = parse::arg_attrs(cx, &pat_type.attrs);
            params.push(Param {
                ident: &pat.ident,
                ty: &pat_type.ty,
                description: attrs
                    .description
                    .get()
                    .map(|d| d.value().into())
                    .or_else(|| doc::description(&pat_type.attrs)),
                default: attrs.default.get(),
            });
        }
        (context, params)
    }

    /// The function is the whole argument object when its one business parameter is
    /// called `args` (as in Python's `args: TicketArgs` / `args: dict[str, object]`).
    pub(crate) fn args_struct(&self) -> Option<&Param<'a>> {
        match self.params.as_slice() {
            [only] if only.ident == "args" => Some(only),
            _ => None,
        }
    }
}

/// `Some(by_ref)` when `ty` is `ToolContext` or `&ToolContext` (any path ending so).
pub(crate) fn context_type(ty: &Type) -> Option<bool> {
    let (ty, by_ref) = match ty {
        Type::Reference(r) => (&*r.elem, true),
        other => (other, false),
    };
    match ty {
        Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "ToolContext") => {
            Some(by_ref)
        }
        _ => None,
    }
}

fn is_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Result"))
}

fn int<N: std::str::FromStr>(cx: &Ctxt, lit: &syn::LitInt) -> Option<N>
where
    N::Err: std::fmt::Display,
{
    lit.base10_parse().map_err(|e| cx.error_spanned_by(lit, e)).ok()
}

/// Checks `lit` holds a JSON object, returning the text.
fn json_object(cx: &Ctxt, lit: &LitStr) -> Option<String> {
    let text = lit.value();
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Object(_)) => Some(text),
        Ok(other) => {
            cx.error_spanned_by(lit, format!("expected a JSON object (`r#\"{{...}}\"#`), got `{other}`"));
            None
        }
        Err(err) => {
            cx.error_spanned_by(lit, format!("invalid JSON: {err}"));
            None
        }
    }
}
