//! Gantry's fuzz targets, one per parser of bytes that come from outside
//! Gantry (a client, a language server or debug adapter, a kernel, a
//! model's patch or pattern, a settings file, a bridged server's schema).
//! Each function takes the fuzzer's bytes and panics only on a broken
//! promise: a parser that panics, an error that says nothing, an answer
//! that is not what the protocol allows. `fuzz_targets/` wraps each for
//! libFuzzer (`scripts/fuzz.sh`); `tests/corpora.rs` replays the kept
//! inputs of each on stable, in every test run.

use std::sync::OnceLock;

use gantry_core::schema::ParamSchema;
use serde_json::Value;

/// One target: the fuzzer's bytes in, a panic only on a broken promise.
pub type Target = fn(&[u8]);

/// The target functions by name, as `fuzz_targets/` and the corpus
/// folders name them.
pub const TARGETS: [(&str, Target); 9] = [
    ("stdio", stdio),
    ("http", http),
    ("framing", framing),
    ("kernel_frames", kernel_frames),
    ("apply_patch", apply_patch),
    ("settings", settings),
    ("tool_params", tool_params),
    ("ast_pattern", ast_pattern),
    ("schema_clean", schema_clean),
];

/// A client's stdin: newline-delimited JSON-RPC (crates/mcp).
pub fn stdio(data: &[u8]) {
    gantry_mcp::fuzz::stdio(data);
}

/// A client's HTTP request to `gantry mcp --http`, headers and body
/// (crates/mcp), against a server on loopback whose runs see the read
/// tools of an empty temporary workspace.
pub fn http(data: &[u8]) {
    gantry_mcp::fuzz::http(
        || {
            let workspace = tempfile::tempdir().expect("a workspace").keep();
            // Read tools only: a fuzzed call must not run commands.
            let config = gantry_assembly::RunConfig {
                root: workspace,
                surface: gantry_core::Surface::new(
                    gantry_core::Tier::Read,
                    gantry_core::ApprovalMode::Client,
                ),
                settings_files: Vec::new(),
            };
            std::sync::Arc::new(move |human, origin| {
                let config = config.clone();
                Box::pin(
                    async move { gantry_assembly::build_run(&config, human, Some(origin)).await },
                )
            })
        },
        data,
    );
}

/// A language server's or debug adapter's output: `Content-Length`
/// framed JSON (crates/process). Every message read is at most the limit;
/// the reader ends, with an error or at the end, never loops.
pub fn framing(data: &[u8]) {
    let runtime = current_thread();
    runtime.block_on(async {
        let mut reader = tokio::io::BufReader::new(data);
        for _ in 0..=data.len() {
            match gantry_process::framing::read_message(&mut reader).await {
                Ok(Some(body)) => {
                    assert!(body.len() <= gantry_process::framing::MAX_MESSAGE);
                    let _ = serde_json::from_slice::<Value>(&body);
                }
                Ok(None) | Err(_) => return,
            }
        }
        panic!("more messages than bytes: the reader loops");
    });
}

/// A kernel's frames: a big-endian length and a JSON body
/// (crates/kernel). Each frame is read or refused with what was wrong.
pub fn kernel_frames(data: &[u8]) {
    let runtime = current_thread();
    runtime.block_on(async {
        let mut frames = gantry_kernel::protocol::read_frames(std::io::Cursor::new(data.to_vec()));
        while let Some(frame) = frames.recv().await {
            if let Err(error) = frame {
                assert!(!error.is_empty(), "a frame error that says nothing");
            }
        }
    });
}

/// A model's patch, in either of `apply_patch`'s formats (crates/edit).
pub fn apply_patch(data: &[u8]) {
    gantry_edit::fuzz::patch(&String::from_utf8_lossy(data));
}

/// A user's and a workspace's settings files, split at the first NUL,
/// merged and checked section by section by every family.
pub fn settings(data: &[u8]) {
    let (user, workspace) = split_at_nul(data);
    let Ok(settings) = gantry_core::fuzz::settings_files(user, workspace) else {
        return;
    };
    for warning in gantry_assembly::settings_warnings(&settings) {
        assert!(!warning.is_empty(), "a settings warning that says nothing");
    }
}

/// A model's arguments for one of Gantry's tools (the first byte picks
/// which), checked against its schema as every call's are.
pub fn tool_params(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(args) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let schemas = tool_schemas();
    let schema = &schemas[usize::from(which) % schemas.len()];
    gantry_core::fuzz::tool_params(schema, args);
}

/// A model's structural pattern (the first byte picks the language), and
/// a source to find it in after the first NUL (crates/ast).
pub fn ast_pattern(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let (pattern, source) = split_at_nul(rest);
    gantry_ast::fuzz::pattern(
        which,
        &String::from_utf8_lossy(pattern),
        &String::from_utf8_lossy(source),
    );
}

/// A bridged server's input schema, made one a model can use: `$ref`s
/// inlined within their bound, an object at the top (crates/discovery).
pub fn schema_clean(data: &[u8]) {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let clean = gantry_discovery::names::clean_schema(&schema);
    assert!(
        clean.is_object(),
        "a cleaned schema that is not an object: {clean}"
    );
}

/// Splits `data` at its first NUL: before it, and after it (empty when
/// there is none).
fn split_at_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The compiled parameter schemas of every tool Gantry has, built once.
fn tool_schemas() -> &'static [ParamSchema] {
    static SCHEMAS: OnceLock<Vec<ParamSchema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let workspace = tempfile::tempdir().expect("a workspace");
        let runtime = current_thread();
        let run = runtime
            .block_on(gantry_assembly::reference_run(workspace.path()))
            .expect("the reference run");
        let schemas: Vec<ParamSchema> = run
            .tools()
            .into_iter()
            .map(|tool| ParamSchema::compile(tool.input_schema).expect("a tool's schema compiles"))
            .collect();
        runtime.block_on(run.shutdown());
        assert!(schemas.len() >= 15, "only {} tools", schemas.len());
        schemas
    })
}
