//! A small runner for test files that need their own `main` (cargo's
//! `harness = false`): those that choose how the process's children are
//! reaped (a process-wide choice, made before the first spawn), or that
//! serve as the helper process their own tests start. It runs the tests at
//! once on one runtime, takes a name filter, and closes with libtest's
//! summary line.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::Instant;

/// A test: its name and the future that runs it (failing by panicking).
pub type Test = (
    &'static str,
    fn() -> Pin<Box<dyn Future<Output = ()> + Send>>,
);

/// Runs the `tests` whose name contains one of the arguments that are no
/// flags (all without any), and reports them as libtest does.
pub fn run(tests: &[Test]) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&String> = args.iter().filter(|arg| !arg.starts_with('-')).collect();
    let chosen: Vec<&Test> = tests
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    let started = Instant::now();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let outcomes = runtime.block_on(async {
        let handles: Vec<_> = chosen
            .iter()
            .map(|(name, test)| (*name, tokio::spawn(test())))
            .collect();
        let mut outcomes = Vec::new();
        for (name, handle) in handles {
            outcomes.push((name, handle.await.is_ok()));
        }
        outcomes
    });
    for (name, passed) in &outcomes {
        println!("test {name} ... {}", if *passed { "ok" } else { "FAILED" });
    }
    let failed = outcomes.iter().filter(|(_, passed)| !passed).count();
    println!(
        "\ntest result: {}. {} passed; {failed} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed == 0 { "ok" } else { "FAILED" },
        outcomes.len() - failed,
        tests.len() - chosen.len(),
        started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
