//! Embedding Gantry's file tools in your own harness: build a run on a
//! folder, register the fs family, call a tool, show the result.
//!
//! ```text
//! cargo run -p gantry-fs --example embed -- Cargo.toml
//! cargo run -p gantry-fs --example embed -- src/lib.rs crates/fs
//! ```
//!
//! The first argument is the file to read (default `Cargo.toml`), the
//! second the workspace root (default the current directory).

use gantry_core::{Run, Workspace};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next().unwrap_or_else(|| "Cargo.toml".into());
    let root = args.next().unwrap_or_else(|| ".".into());

    // One run: the workspace it is confined to, and its tools.
    let run = gantry_fs::register(Run::builder(Workspace::new(&root)?)).build();

    // The same pipeline every front end uses: lookup, validation, execution.
    match run.call("read_file", json!({ "path": file })).await {
        Ok(result) => {
            // `return_display` is for the person; `llm_content` would go to
            // the model.
            println!("{}", result.return_display.to_text());
            Ok(())
        }
        Err(error) => {
            eprintln!("read_file failed: {error}");
            std::process::exit(1);
        }
    }
}
