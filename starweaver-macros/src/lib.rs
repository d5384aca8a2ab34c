//! The `#[tool]` attribute of [starweaver](https://docs.rs/starweaver). Use it as
//! `starweaver::tool`; its documentation (with examples) lives there.
//!
//! The expansion is a pipeline: `parse` reads the attribute and parameter tokens, `model`
//! builds the tool function's model, `validate` checks the rules that need all of it (every
//! error is collected in `ctxt` so users see them at once), and `expand` emits code.

mod ctxt;
mod doc;
mod expand;
mod model;
mod parse;
mod symbol;
#[cfg(test)]
mod tests;
mod validate;

use proc_macro::TokenStream;

/// Turns a function into a starweaver tool. See `starweaver::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let expanded = expand::tool(args.into(), item.into());
    if std::env::var_os("STARWEAVER_MACROS_DEBUG").is_some() {
        eprintln!("{expanded}");
    }
    expanded.into()
}
