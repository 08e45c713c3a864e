//! Every kept input of every fuzz target, replayed on stable: the seeds
//! in `fuzz/corpus/<target>/` and the inputs that once broke a promise,
//! kept in `fuzz/regressions/<target>/`. A panic names the file.

use std::path::Path;

#[test]
fn every_kept_input_of_every_target_keeps_its_promises() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut replayed = 0;
    let mut broken = Vec::new();
    for (name, target) in gantry_fuzz::TARGETS {
        let mut inputs = Vec::new();
        for folder in ["corpus", "regressions"] {
            let dir = root.join(folder).join(name);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            inputs.extend(entries.map(|entry| entry.unwrap().path()));
        }
        assert!(!inputs.is_empty(), "no kept input for the target {name}");
        inputs.sort();
        for input in inputs {
            let data = std::fs::read(&input).unwrap();
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                broken.push(input.display().to_string());
            }
            replayed += 1;
        }
    }
    assert!(
        broken.is_empty(),
        "inputs that break a promise:\n{}",
        broken.join("\n")
    );
    assert!(replayed >= gantry_fuzz::TARGETS.len());
}
