//! Times `ast_grep` calls in one process, the way an agent's run makes
//! them: the first call is cold (nothing parsed yet), later ones are warm
//! (the run's parse cache holds what earlier calls parsed). Used by
//! `bench/ast.sh`.
//!
//! ```text
//! cargo run --release -p gantry-ast --example ast_bench -- CORPUS LANGUAGE OUT_DIR PATTERN...
//! ```
//!
//! For each pattern it prints `pattern<TAB>seconds<TAB>matches`; then the
//! parse cache's own estimate of its memory and the process's resident
//! memory; then, untimed, it writes the match locations (`path:line:col`,
//! one per line) to `OUT_DIR/gantry-<n>.txt`. `GANTRY_AST_CACHE_MB`
//! sets the cache cap (settings `ast.cacheMegabytes`).

// Benches build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use gantry_core::{Run, Settings, Workspace};
use serde_json::json;

fn main() {
    // SAFETY: first in main, as the binary does, before any thread.
    unsafe { gantry_ast::use_mimalloc_for_trees() };
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
        let mut counts = Vec::new();
        for pattern in patterns {
            let started = Instant::now();
            let result = call(&run, pattern, language, None).await;
            let seconds = started.elapsed().as_secs_f64();
            counts.push(total(&result));
            println!("{pattern}\t{seconds:.3}\t{}", total(&result));
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
        // The locations, untimed: a result is cut at the model's budget
        // (256 KiB), so they are gathered folder by folder, splitting a
        // folder whose result was cut.
        for (index, pattern) in patterns.iter().enumerate() {
            let mut locations = Vec::new();
            gather(&run, pattern, language, Path::new(corpus), &mut locations).await;
            assert_eq!(
                locations.len(),
                counts[index],
                "{pattern}: the locations gathered by folder are not the timed call's count"
            );
            std::fs::write(
                format!("{out_dir}/gantry-{index}.txt"),
                locations.join("\n") + "\n",
            )
            .expect("the output folder");
        }
    });
}

async fn call(run: &Run, pattern: &str, language: &str, path: Option<&Path>) -> String {
    let mut params = json!({"pattern": pattern, "language": language, "max_results": 10_000_000});
    if let Some(path) = path {
        params["path"] = json!(path);
    }
    run.call("ast_grep", params)
        .await
        .unwrap_or_else(|e| panic!("{pattern}: {}", e.message))
        .text_content()
}

/// The match count a result's first line states ("N matches for ..."),
/// 0 for "No matches".
fn total(text: &str) -> usize {
    let header = text
        .lines()
        .find(|line| !line.starts_with("Note: "))
        .unwrap_or("");
    header
        .split(' ')
        .next()
        .and_then(|count| count.parse().ok())
        .unwrap_or(0)
}

/// Every match location (`path:line:col`) under `path`.
fn gather<'a>(
    run: &'a Run,
    pattern: &'a str,
    language: &'a str,
    path: &'a Path,
    out: &'a mut Vec<String>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>> {
    Box::pin(async move {
        let text = if path.is_file() {
            // A file is searched in the language asked for, whatever its
            // extension: only those the walk would have taken count.
            let params = json!({"pattern": pattern, "path": path, "max_results": 10_000_000});
            match run.call("ast_grep", params).await {
                Ok(result) => result.text_content(),
                Err(_) => return,
            }
        } else {
            call(run, pattern, language, Some(path)).await
        };
        if path.is_file() && !text.contains(&format!(" ({language}, compiled to ")) {
            return;
        }
        if text.contains("[the result was cut here") {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .expect("a folder whose result was cut")
                .map(|entry| entry.expect("a folder entry").path())
                .filter(|entry| {
                    !entry
                        .file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with('.'))
                })
                .collect();
            entries.sort();
            for entry in entries {
                gather(run, pattern, language, &entry, out).await;
            }
            return;
        }
        out.extend(text.lines().filter_map(|line| {
            let (location, _) = line.trim_start().split_once(": ")?;
            (location.matches(':').count() == 2 && !location.contains(' '))
                .then(|| location.to_string())
        }));
    })
}
