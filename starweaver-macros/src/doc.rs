//! `///` comments into descriptions.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the `#[doc]` attributes (what `///` lines become), with the one leading
/// space rustdoc adds removed and surrounding blank lines trimmed; `None` if there is none.
pub(crate) fn description(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| {
            text.lines().map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned()).collect::<Vec<_>>()
        })
        .collect();
    let text = lines.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
