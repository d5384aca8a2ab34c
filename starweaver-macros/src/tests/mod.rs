//! The expander on `quote!` input: expansion snapshots and error collection.

use proc_macro2::TokenStream;
use quote::quote;

fn expand(args: TokenStream, item: TokenStream) -> String {
    let file: syn::File = syn::parse2(crate::expand::tool(args, item)).expect("expansion parses as items");
    prettyplease::unparse(&file)
}

#[test]
fn typed_parameters_expand_to_an_args_struct_and_a_handle() {
    insta::assert_snapshot!(expand(
        quote!(timeout_ms = 5_000),
        quote! {
            /// Read a file.
            pub async fn read_file(ctx: &ToolContext, path: String, #[arg(default, description = "byte cap")] max_bytes: Option<u64>) -> Result<String, std::io::Error> {
                todo!()
            }
        },
    ));
}

#[test]
fn a_plain_fn_runs_on_the_blocking_pool() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote!(
            fn add(left: i64, right: i64) -> i64 {
                left + right
            }
        )
    ));
}

#[test]
fn an_args_parameter_is_the_whole_argument_object() {
    let out = expand(
        quote!(),
        quote!(
            async fn fetch(args: TicketArgs) -> String {
                todo!()
            }
        ),
    );
    let compact: String = out.split_whitespace().collect();
    assert!(compact.contains("__args:TicketArgs|"), "{out}");
    assert!(out.contains("schema_for::<TicketArgs>"), "{out}");
    assert!(!out.contains("struct __Args"), "{out}");
}

#[test]
fn options_become_builder_calls_and_an_explicit_schema_derives_none() {
    let out = expand(
        quote!(
            name = "fetch_it",
            strict,
            timeout_ms = 5,
            metadata = r#"{"risk": "low"}"#,
            parameters_schema = r#"{"type": "object"}"#
        ),
        quote!(
            /// Fetch.
            async fn fetch(args: serde_json::Value) {}
        ),
    );
    let compact: String = out.split_whitespace().collect();
    assert!(
        compact.contains(r#"ToolBuilder::new("fetch_it").description("Fetch.").strict(true).timeout_ms(5).metadata("#),
        "{out}"
    );
    assert!(compact.contains(".parameters_schema(::starweaver::__private::json("), "{out}");
    assert!(compact.contains("::core::option::Option::None,"), "{out}");
    assert!(!out.contains("schema_for"), "{out}");
}

#[test]
fn the_crate_path_can_be_overridden() {
    let out = expand(
        quote!(crate = "my::reexport"),
        quote!(
            async fn f() {}
        ),
    );
    assert!(out.contains("-> impl my::reexport::Tool"), "{out}");
    assert!(out.contains("my::reexport::ToolBuilder::new"), "{out}");
    assert!(!out.contains("::starweaver"), "{out}");
}

#[test]
fn every_error_is_reported_at_once_with_the_function_kept() {
    let out = crate::expand::tool(
        quote!(descr = "x", name = "a", name = "b"),
        quote!(
            async fn f<T>((a, b): (i32, i32), ctx: &ToolContext) {}
        ),
    )
    .to_string();
    let errors = out.matches("compile_error").count();
    assert_eq!(errors, 5, "{out}");
    assert!(out.contains("async fn f"), "the user's function survives: {out}");
    assert!(out.contains("PoisonedTool"), "{out}");
}

#[test]
fn unparsable_items_are_returned_with_the_error() {
    let out = crate::expand::tool(
        quote!(),
        quote!(
            struct NotAFunction;
        ),
    )
    .to_string();
    assert!(out.contains("struct NotAFunction"), "{out}");
    assert!(out.contains("compile_error"), "{out}");
}
