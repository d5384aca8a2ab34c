//! `///` comments into descriptions.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// A description: text known when the macro runs, or, when a doc attribute is an
/// expression (`#[doc = include_str!("tool.md")]`, as rmcp allows), the pieces the
/// compiler joins with `concat!`, trimmed when the definition is built.
pub(crate) enum Description {
    Text(String),
    Composed(Vec<TokenStream>),
}

impl From<String> for Description {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl ToTokens for Description {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Self::Text(text) => text.to_tokens(tokens),
            Self::Composed(pieces) => tokens.extend(quote!(::core::concat!(#(#pieces),*).trim())),
        }
    }
}

/// The `#[doc]` attributes (what `///` lines become) as a description: literal lines with
/// the one leading space rustdoc adds removed and surrounding blank lines trimmed; `None`
/// if there is none.
pub(crate) fn description(attrs: &[Attribute]) -> Option<Description> {
    let mut pieces: Vec<TokenStream> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("doc")) {
        let Meta::NameValue(nv) = &attr.meta else { continue };
        match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => {
                lines
                    .extend(s.value().lines().map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned()));
            }
            expr => {
                if !lines.is_empty() {
                    let text = format!("{}\n", std::mem::take(&mut lines).join("\n"));
                    pieces.push(quote!(#text));
                }
                pieces.push(expr.to_token_stream());
            }
        }
    }
    let text = lines.join("\n");
    if pieces.is_empty() {
        let text = text.trim();
        return (!text.is_empty()).then(|| Description::Text(text.to_owned()));
    }
    if !text.is_empty() {
        let text = format!("\n{text}");
        pieces.push(quote!(#text));
    }
    Some(Description::Composed(pieces))
}
