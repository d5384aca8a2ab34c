//! Rust `#[tool]` functions served to any MCP client: over stdio by default, or over
//! streamable HTTP with `--http HOST:PORT` (at `http://HOST:PORT/mcp`).
//!
//! `cargo run --example mcp_server --features mcp [-- --http 127.0.0.1:8000]`. `deploy`
//! needs approval: the client is asked by MCP elicitation.

#[path = "../quickstart/tools.rs"]
mod tools;

use starweaver::mcp::McpService;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = McpService::builder("release-tools")
        .tool(tools::add_tool())
        .tool(tools::deploy_tool())
        .approval_required_tools(["deploy"])
        .build()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => service.serve_stdio().await?,
        [flag, address] if flag == "--http" => {
            let listener = tokio::net::TcpListener::bind(address).await?;
            eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
            service.serve_http(listener).await?;
        }
        _ => return Err("usage: mcp_server [--http HOST:PORT]".into()),
    }
    Ok(())
}
