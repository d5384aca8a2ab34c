//! The model into tokens. No validation happens here: `emit` runs only on a checked model,
//! `fallback` only with the errors to show.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn};

use crate::ctxt::Ctxt;
use crate::model::{Output, Param, ReturnSchema, ToolFn};
use crate::parse::{self, ArgDefault, Value};
use crate::symbol::PARAMETERS_SCHEMA;
use crate::validate;

/// The whole pipeline: parse, model, validate, then emit or fall back.
pub(crate) fn tool(args: TokenStream, mut item: TokenStream) -> TokenStream {
    let item_fn: ItemFn = match syn::parse2(item.clone()) {
        Ok(item_fn) => item_fn,
        // Keep the item so its callers still resolve; add the error.
        Err(err) => {
            item.extend(err.to_compile_error());
            return item;
        }
    };
    let cx = Ctxt::new();
    let tool_args = parse::tool_args(&cx, args);
    let tool = ToolFn::from_ast(&cx, &item_fn, tool_args);
    validate::check(&cx, &tool);
    match cx.check() {
        Ok(()) => emit(&tool),
        Err(err) => fallback(&tool, &err),
    }
}

/// The user's function without our helper attributes (`#[arg]`, and doc comments on
/// parameters, which rustc does not allow there).
fn user_fn(original: &ItemFn) -> ItemFn {
    let mut item = original.clone();
    for input in &mut item.sig.inputs {
        if let FnArg::Typed(pat_type) = input {
            pat_type.attrs.retain(|attr| !parse::is_helper(attr));
        }
    }
    item
}

fn handle_ident(tool: &ToolFn<'_>) -> syn::Ident {
    let ident = tool.original.sig.ident.to_string();
    format_ident!("{}_tool", ident.trim_start_matches("r#"), span = tool.original.sig.ident.span())
}

/// The handle: the user's function behind the same `ToolBuilder` and `FnTool` a closure
/// tool uses, so a `#[tool]` is built and called the way `ToolBuilder::handler` is.
fn emit(tool: &ToolFn<'_>) -> TokenStream {
    let krate = &tool.krate;
    let private = quote!(#krate::__private);
    let user_fn = user_fn(tool.original);
    let vis = &tool.original.vis;
    let ident = &tool.original.sig.ident;
    let handle = handle_ident(tool);
    let name = &tool.name.0;

    let (args_items, args_ty, call_args) = match tool.args_struct() {
        Some(param) => (quote!(), param.ty.to_token_stream(), quote!(__args)),
        None => {
            let idents = tool.params.iter().map(|p| p.ident);
            (args_struct(tool), quote!(__Args), quote!(#(__args.#idents),*))
        }
    };
    let derive = match tool.option(PARAMETERS_SCHEMA) {
        Some(_) => quote!(::core::option::Option::None),
        None => quote!(::core::option::Option::Some(#private::schema_for::<#args_ty>)),
    };
    let context = match &tool.context {
        Some(c) if c.by_ref => quote!(&__ctx,),
        Some(_) => quote!(__ctx,),
        None => quote!(),
    };
    let invoke = if tool.original.sig.asyncness.is_some() {
        quote!(#ident(#context #call_args).await)
    } else {
        quote!(#private::run_blocking(#name, move || #ident(#context #call_args)).await?)
    };
    let output = match &tool.output {
        Output::Fallible(ty) => quote_spanned!(ty.span()=> #private::fallible_output(__ret)),
        Output::Plain(Some(ty)) => quote_spanned!(ty.span()=> #private::plain_output::<#ty>(__ret)),
        Output::Plain(None) => quote!(#private::plain_output(__ret)),
    };
    let derive_return = derive_return(tool);
    let builder = builder(tool);
    let doc = format!(
        "The [`{krate}::Tool`] made by `#[tool]` from [`{ident}`]: register it with `.tool({handle}())`.",
        krate = quote!(#krate).to_string().replace(' ', "")
    );
    quote! {
        #user_fn

        #[doc = #doc]
        #[allow(clippy::needless_lifetimes, unused_variables)]
        #vis fn #handle() -> impl #krate::Tool {
            #args_items

            #private::tool(#builder, #derive, #derive_return, |__ctx: #krate::ToolContext, __args: #args_ty| async move {
                let __ret = #invoke;
                #output
            })
        }
    }
}

/// How the return schema is made: from the value type (the `Ok` type of a `Result`), by
/// autoref specialisation unless `return_schema` alone requires `JsonSchema` of it.
fn derive_return(tool: &ToolFn<'_>) -> TokenStream {
    let private = {
        let krate = &tool.krate;
        quote!(#krate::__private)
    };
    let none = quote!(::core::option::Option::None);
    let (value_ty, span) = match &tool.output {
        // An `impl Trait` cannot be named where the schema is made.
        Output::Fallible(ty) | Output::Plain(Some(ty)) if mentions_impl(ty.to_token_stream()) => return none,
        Output::Fallible(ty) => (quote_spanned!(ty.span()=> <#ty as #private::Fallible>::Ok), ty.span()),
        Output::Plain(Some(ty)) => (ty.to_token_stream(), ty.span()),
        Output::Plain(None) => return none,
    };
    match &tool.return_schema {
        ReturnSchema::Derive => quote_spanned! {span=> {
            #[allow(unused_imports)]
            use #private::{HasReturnSchema as _, NoReturnSchema as _};
            (&#private::ReturnSchema::<#value_ty>::new()).derive()
        }},
        ReturnSchema::Required => quote_spanned!(span=> #private::required_return_schema::<#value_ty>()),
        ReturnSchema::Off | ReturnSchema::Explicit(_) => none,
    }
}

fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == "impl",
        proc_macro2::TokenTree::Group(group) => mentions_impl(group.stream()),
        _ => false,
    })
}

/// The hidden struct the JSON arguments decode into, with a default fn per
/// `#[arg(default = expr)]`.
fn args_struct(tool: &ToolFn<'_>) -> TokenStream {
    let krate = &tool.krate;
    let serde_path = quote!(#krate::__private::serde).to_string().replace(' ', "");
    let schemars_path = quote!(#krate::__private::schemars).to_string().replace(' ', "");
    let mut default_fns = Vec::new();
    let fields = tool.params.iter().map(|param| {
        let Param { ident, ty, description, default } = param;
        let description = description.as_ref().map(|d| quote!(#[schemars(description = #d)]));
        let default = default.as_ref().map(|default| match default {
            ArgDefault::Trait(span) => quote_spanned!(*span=> #[serde(default)]),
            ArgDefault::Expr(expr) => {
                let fn_ident = format_ident!("__default_{}", ident.to_string().trim_start_matches("r#"));
                let fn_name = fn_ident.to_string();
                default_fns.push(quote_spanned! {expr.span()=>
                    #[doc(hidden)]
                    fn #fn_ident() -> #ty {
                        #expr
                    }
                });
                quote!(#[serde(default = #fn_name)])
            }
        });
        quote!(#description #default #ident: #ty)
    });
    let fields: Vec<_> = fields.collect();
    quote! {
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_path, deny_unknown_fields)]
        #[schemars(crate = #schemars_path)]
        #[doc(hidden)]
        struct __Args {
            #(#fields),*
        }
        #(#default_fns)*
    }
}

/// `ToolBuilder::new(name)` and a call of the method named by each option.
fn builder(tool: &ToolFn<'_>) -> TokenStream {
    let krate = &tool.krate;
    let name = &tool.name.0;
    let description = tool.description.as_ref().map(|d| quote!(.description(#d)));
    let return_schema = match &tool.return_schema {
        ReturnSchema::Explicit(lit) => Some(quote_spanned!(lit.span()=> .return_schema(#krate::__private::json(#lit)))),
        _ => None,
    };
    let options = tool.options.iter().map(|(key, value)| {
        let value = match value {
            Value::Str(lit) => lit.to_token_stream(),
            Value::Flag(lit) => lit.to_token_stream(),
            Value::Int(lit) => lit.to_token_stream(),
            // One limit for every handle the function gives, as one `@tool` object has one.
            Value::Limit(lit) => {
                let calls = syn::LitInt::new(&format!("{}u32", lit.base10_digits()), lit.span());
                quote_spanned!(lit.span()=> {
                    static LIMIT: ::std::sync::LazyLock<#krate::ConcurrencyLimit> =
                        ::std::sync::LazyLock::new(|| #krate::ConcurrencyLimit::from(#calls));
                    ::std::clone::Clone::clone(&*LIMIT)
                })
            }
            Value::Json(lit) => quote_spanned!(lit.span()=> #krate::__private::json(#lit)),
            Value::Path(path) => path.to_token_stream(),
        };
        let method = format_ident!("{}", key.0, span = value.span());
        quote!(.#method(#value))
    });
    quote!(#krate::ToolBuilder::new(#name) #description #(#options)* #return_schema)
}

/// Errors plus everything callers need to keep compiling: the user's function and a
/// placeholder handle (tokio-macros' `DEFAULT_ERROR_CONFIG`), so only the real mistakes show.
fn fallback(tool: &ToolFn<'_>, err: &syn::Error) -> TokenStream {
    let krate = &tool.krate;
    let user_fn = user_fn(tool.original);
    let vis = &tool.original.vis;
    let handle = handle_ident(tool);
    let name = &tool.name.0;
    let err = err.to_compile_error();
    quote! {
        #user_fn

        #[doc(hidden)]
        #vis fn #handle() -> impl #krate::Tool {
            #krate::__private::PoisonedTool(#krate::ToolDefinition::new(#name, #krate::__private::serde_json::Value::Null))
        }

        #err
    }
}
