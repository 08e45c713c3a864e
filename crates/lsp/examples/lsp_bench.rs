//! Gantry's side of bench/lsp.sh: the same requests as bench/lsp_raw.py,
//! through `Run::call` (validation, the tool, the supervisor's re-sync of
//! open files, rendering for the model) against basedpyright.
//!
//! Usage: lsp_bench PROJECT_DIR CALLS; prints one JSON object of timings in
//! milliseconds.

use std::time::Instant;

use gantry_core::write::ChangeSet;
use gantry_core::{Run, Settings, Workspace};
use serde_json::json;

fn pct(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let index = ((p / 100.0) * (values.len() - 1) as f64).round() as usize;
    values[index.min(values.len() - 1)]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(&args[1]);
    let calls: usize = args[2].parse().unwrap_or(200);
    let settings = Settings::from_value(json!({"lsp": {"servers": {
        "pyright": {"disabled": true}, "pylsp": {"disabled": true}
    }}}))
    .expect("settings");

    let started = Instant::now();
    let builder = Run::builder(Workspace::new(&root).expect("workspace")).settings(settings);
    let run = gantry_lsp::register(builder).build();
    let at = json!({"action": "references", "file": "main.py", "line": 4, "symbol": "greet"});
    let first = run.call("lsp", at.clone()).await.expect("references");
    let cold = started.elapsed().as_secs_f64() * 1000.0;
    assert!(first.text_content().contains("references to `greet`"));

    let mut samples: Vec<(&str, Vec<f64>)> = vec![
        ("definition", Vec::new()),
        ("references", Vec::new()),
        ("hover", Vec::new()),
    ];
    for _ in 0..calls {
        for (action, values) in samples.iter_mut() {
            let mut args = at.clone();
            args["action"] = json!(action);
            let t = Instant::now();
            run.call("lsp", args).await.expect("call");
            values.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }

    let path = run.workspace().resolve("main.py").expect("path");
    let text = std::fs::read_to_string(&path).expect("main.py");
    let mut writes = Vec::new();
    for i in 0..20 {
        let new = if i % 2 == 0 {
            format!("{text}undefined_thing()\n")
        } else {
            text.clone()
        };
        let mut changes = ChangeSet::new();
        changes
            .plan_write(run.workspace(), &path, new)
            .expect("plan");
        let t = Instant::now();
        let applied = run.apply(changes).await.expect("write");
        writes.push(t.elapsed().as_secs_f64() * 1000.0);
        if i % 2 == 0 {
            assert!(
                applied.notes.join("").contains("undefined_thing"),
                "{applied:?}"
            );
        }
    }
    run.shutdown().await;

    let mut out = json!({
        "cold_ms": cold,
        "write_diagnostics_p50_ms": pct(&mut writes, 50.0),
    });
    for (name, mut values) in samples {
        out[name] = json!({"p50": pct(&mut values, 50.0), "p99": pct(&mut values, 99.0)});
    }
    println!("{out}");
}
