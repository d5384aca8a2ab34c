//! Snapshots of the `ToolDefinition` of every tool in the tests and examples, in the
//! top-level `snapshots/` (review changes with `cargo insta review`). Property order is
//! declaration order, so a reordered field shows up as a diff.

use starweaver::Tool;
use starweaver_tests as corpus;

fn snapshot(tool: &impl Tool) {
    let definition = tool.definition();
    tool.validate().unwrap_or_else(|err| panic!("{err}"));
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!(format!("rust__{}", definition.name), definition);
    });
}

#[test]
fn primitives() {
    snapshot(&corpus::add_tool());
    snapshot(&corpus::multiply_tool());
}

#[test]
fn options_and_defaults() {
    snapshot(&corpus::lookup_tool());
}

#[test]
fn lists() {
    snapshot(&corpus::sum_tool());
}

#[test]
fn nested_structs_and_maps() {
    snapshot(&corpus::register_tool());
}

#[test]
fn enums_with_documented_variants_and_renamed_strict_tools() {
    snapshot(&corpus::create_ticket_tool());
}

#[test]
fn an_argument_struct() {
    snapshot(&corpus::fetch_ticket_tool());
}

#[test]
fn an_explicit_schema() {
    snapshot(&corpus::inspect_payload_tool());
}

#[test]
fn context_parameters_and_policy_options() {
    snapshot(&corpus::whoami_tool());
    snapshot(&corpus::deploy_tool());
    snapshot(&corpus::flaky_tool());
    snapshot(&corpus::nap_tool());
}

#[test]
fn fallible_and_blocking_tools() {
    snapshot(&corpus::read_text_tool());
    snapshot(&corpus::explode_tool());
}

#[test]
fn the_quickstart_example_tools() {
    insta::with_settings!({snapshot_suffix => "quickstart"}, {
        snapshot(&corpus::quickstart::add_tool());
        snapshot(&corpus::quickstart::deploy_tool());
    });
}

#[test]
fn return_schemas_derived_and_explicit() {
    snapshot(&corpus::forecast_tool());
    snapshot(&corpus::status_tool());
}
