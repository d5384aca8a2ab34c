//! Rules about the function as a whole, one `check_*` each. Simple per-key checks happen
//! while parsing; these need the full model.

use syn::{FnArg, Pat, Type};

use crate::ctxt::Ctxt;
use crate::model::{ToolFn, context_type};
use crate::parse::Value;
use crate::symbol::STRICT;

pub(crate) fn check(cx: &Ctxt, tool: &ToolFn<'_>) {
    check_generics(cx, tool);
    check_qualifiers(cx, tool);
    check_inputs(cx, tool);
    check_name(cx, tool);
    check_strict(cx, tool);
    check_args_struct(cx, tool);
}

/// A tool's schema is fixed when it is registered, so its types must be concrete.
fn check_generics(cx: &Ctxt, tool: &ToolFn<'_>) {
    let generics = &tool.original.sig.generics;
    if !generics.params.is_empty() {
        cx.error_spanned_by(
            generics,
            "`#[tool]` does not support generic functions: a tool's argument and return types must be concrete",
        );
    }
}

/// The generated adapter calls the function like any caller would; `unsafe` would make
/// that call unsound to write for the user.
fn check_qualifiers(cx: &Ctxt, tool: &ToolFn<'_>) {
    if let Some(token) = &tool.original.sig.unsafety {
        cx.error_spanned_by(token, "`#[tool]` functions cannot be `unsafe`");
    }
}

/// Receivers, non-identifier patterns, misplaced or repeated contexts, borrowed and
/// `impl Trait` parameters: each input must be an owned JSON argument or the context first.
fn check_inputs(cx: &Ctxt, tool: &ToolFn<'_>) {
    let mut seen_context = false;
    for (i, input) in tool.original.sig.inputs.iter().enumerate() {
        let pat_type = match input {
            FnArg::Receiver(receiver) => {
                cx.error_spanned_by(receiver, "`#[tool]` cannot be used on methods: write a free function and reach shared state through `ToolContext` dependencies");
                continue;
            }
            FnArg::Typed(pat_type) => pat_type,
        };
        if context_type(&pat_type.ty).is_some() {
            if seen_context {
                cx.error_spanned_by(&pat_type.ty, "a `#[tool]` function takes at most one `ToolContext`");
            } else if i != 0 {
                cx.error_spanned_by(&pat_type.ty, "`ToolContext` must be the first parameter of a `#[tool]` function");
            }
            seen_context = true;
            continue;
        }
        if !matches!(&*pat_type.pat, Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none()) {
            cx.error_spanned_by(&pat_type.pat, "`#[tool]` parameters must be plain identifiers, each naming one JSON argument; destructure inside the body");
        }
        match &*pat_type.ty {
            Type::Reference(r) => cx.error_spanned_by(
                r,
                "`#[tool]` parameters are deserialized from JSON and must be owned: use `String` instead of `&str`, `Vec<T>` instead of `&[T]`",
            ),
            Type::ImplTrait(t) => {
                cx.error_spanned_by(t, "`#[tool]` does not support `impl Trait` parameters: a tool's argument types must be concrete");
            }
            _ => {}
        }
    }
}

/// Providers accept `[A-Za-z0-9_-]{1,64}`; a bad name fails every request, so fail the build.
fn check_name(cx: &Ctxt, tool: &ToolFn<'_>) {
    let (name, span) = &tool.name;
    let valid =
        (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        cx.syn_error(syn::Error::new(
            *span,
            format!("invalid tool name `{name}`: names must match `[A-Za-z0-9_-]{{1,64}}`"),
        ));
    }
}

/// Strict definitions must describe the tool.
fn check_strict(cx: &Ctxt, tool: &ToolFn<'_>) {
    if let Some(strict) = tool.option(STRICT).and_then(Value::as_flag).filter(|s| s.value)
        && tool.description.is_none()
    {
        cx.error_spanned_by(strict, "`strict` tools need a description: add a doc comment or `description = \"...\"`");
    }
}

/// `#[arg]` describes a field of the generated argument object; an argument struct
/// describes its own fields.
fn check_args_struct(cx: &Ctxt, tool: &ToolFn<'_>) {
    let Some(args) = tool.args_struct() else { return };
    if args.default.is_some() {
        cx.error_spanned_by(
            args.ident,
            "`#[arg(default)]` has no effect on an argument struct: put `#[serde(default)]` on its fields",
        );
    }
}
