//! The parsed `#[tool]` function: what later stages read. Built without failing; problems
//! go to the [`Ctxt`] and the model holds a usable best guess.

use proc_macro2::Span;
use syn::{FnArg, Ident, ItemFn, Pat, Path, ReturnType, Type};

use crate::ctxt::Ctxt;
use crate::doc::{self, Description};
use crate::parse::{self, ArgDefault, ToolArgs, Value};
use crate::symbol::{CRATE, DESCRIPTION, NAME, RETURN_SCHEMA, Symbol};

/// A `#[tool]` function.
pub(crate) struct ToolFn<'a> {
    pub original: &'a ItemFn,
    pub krate: Path,
    /// The tool name, and the tokens to blame when it is invalid.
    pub name: (String, Span),
    pub description: Option<Description>,
    /// The other `#[tool(...)]` options, each forwarded to the `ToolBuilder` method of its name.
    pub options: Vec<(Symbol, Value)>,
    pub context: Option<Context>,
    pub params: Vec<Param<'a>>,
    pub output: Output<'a>,
    pub return_schema: ReturnSchema,
}

/// Where the tool's return schema comes from (`#[tool(return_schema ...)]`).
pub(crate) enum ReturnSchema {
    /// The return type's, if it implements `JsonSchema` (no key given).
    Derive,
    /// The return type's, which must implement `JsonSchema` (`return_schema` alone).
    Required,
    /// None (`return_schema = false`).
    Off,
    /// This JSON text.
    Explicit(syn::LitStr),
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
    pub(crate) fn from_ast(cx: &Ctxt, item: &'a ItemFn, mut args: ToolArgs) -> Self {
        let ident = &item.sig.ident;
        let name = match args.take(NAME).as_ref().and_then(Value::as_str) {
            Some(lit) => (lit.value(), lit.span()),
            None => (ident.to_string().trim_start_matches("r#").to_owned(), ident.span()),
        };
        let krate = match args.take(CRATE) {
            Some(Value::Path(path)) => path,
            _ => syn::parse_quote!(::starweaver),
        };
        let description = match args.take(DESCRIPTION).as_ref().and_then(Value::as_str) {
            Some(lit) => Some(lit.value().into()),
            None => doc::description(&item.attrs),
        };
        let return_schema = match args.take(RETURN_SCHEMA) {
            None => ReturnSchema::Derive,
            Some(Value::Flag(flag)) if flag.value => ReturnSchema::Required,
            Some(Value::Json(lit)) => ReturnSchema::Explicit(lit),
            Some(_) => ReturnSchema::Off,
        };
        let (context, params) = Self::inputs(cx, item);
        Self {
            original: item,
            krate,
            name,
            description,
            options: args.into_rest(),
            context,
            params,
            output: match &item.sig.output {
                ReturnType::Default => Output::Plain(None),
                ReturnType::Type(_, ty) if is_result(ty) => Output::Fallible(ty),
                ReturnType::Type(_, ty) => Output::Plain(Some(ty)),
            },
            return_schema,
        }
    }

    /// The value given for `key`, if any.
    pub(crate) fn option(&self, key: Symbol) -> Option<&Value> {
        self.options.iter().find(|(k, _)| *k == key).map(|(_, value)| value)
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
