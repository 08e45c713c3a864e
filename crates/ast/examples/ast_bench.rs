//! Times `ast_grep` calls in one process, the way an agent's run makes
//! them: the first call is cold (nothing parsed yet), later ones are warm
//! (the run's parse cache holds what earlier calls parsed). Used by
//! `bench/ast.sh`.
//!
//! ```text
//! cargo run --release -p gantry-ast --example ast_bench -- CORPUS LANGUAGE OUT_DIR PATTERN...
//! ```
//!
//! For each pattern it prints `pattern<TAB>seconds<TAB>matches` and writes
//! the match locations (`path:line:col`, one per line) to
//! `OUT_DIR/gantry-<n>.txt`; at the end, the parse cache's own estimate of
//! its memory and the process's resident memory. `GANTRY_AST_CACHE_MB`
//! sets the cache cap (settings `ast.cacheMegabytes`).

// Benches build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use gantry_core::{Run, Settings, Workspace};
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [corpus, language, out_dir, patterns @ ..] = args.as_slice() else {
        eprintln!("usage: ast_bench CORPUS LANGUAGE OUT_DIR PATTERN...");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let workspace = Workspace::new(corpus).expect("the corpus folder");
        let mut settings = serde_json::Map::new();
        if let Ok(megabytes) = std::env::var("GANTRY_AST_CACHE_MB") {
            let megabytes: usize = megabytes.parse().expect("GANTRY_AST_CACHE_MB: a number");
            settings.insert("ast".into(), json!({ "cacheMegabytes": megabytes }));
        }
        let settings = Settings::from_value(settings.into()).expect("settings");
        let run = gantry_ast::register(Run::builder(workspace).settings(settings)).build();
        for (index, pattern) in patterns.iter().enumerate() {
            let started = Instant::now();
            let result = run
                .call(
                    "ast_grep",
                    json!({"pattern": pattern, "language": language, "max_results": 10_000_000}),
                )
                .await
                .unwrap_or_else(|e| panic!("{pattern}: {}", e.message));
            let seconds = started.elapsed().as_secs_f64();
            let text = result.text_content();
            let locations: Vec<&str> = text
                .lines()
                .filter_map(|line| {
                    let (location, _) = line.trim_start().split_once(": ")?;
                    (location.matches(':').count() == 2 && !location.contains(' '))
                        .then_some(location)
                })
                .collect();
            std::fs::write(
                format!("{out_dir}/gantry-{index}.txt"),
                locations.join("\n") + "\n",
            )
            .expect("the output folder");
            println!("{pattern}\t{seconds:.3}\t{}", locations.len());
        }
        for status in run.resource_status() {
            println!("# {status}");
        }
        let proc_status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        for line in proc_status.lines() {
            if line.starts_with("VmRSS") || line.starts_with("VmHWM") {
                println!(
                    "# {}",
                    line.split_whitespace().collect::<Vec<_>>().join(" ")
                );
            }
        }
    });
}
