//! `gantry log`: the runs of this machine and their calls, for a person
//! (as `journalctl` and `docker logs` print theirs).

use std::io::Write;
use std::time::{Duration, SystemTime};

use gantry_core::runlog::read::{self, Record, RunSummary};
use gantry_core::runlog::{parse_time, runs_dir};
use gantry_core::text::char_prefix;
use serde_json::Value;

/// What `gantry log` was asked.
pub struct LogArgs {
    pub run: Option<String>,
    pub follow: bool,
    pub json: bool,
    pub since: Option<String>,
}

/// Prints the runs, or one run's records, and follows them if asked.
pub fn print(args: LogArgs) -> anyhow::Result<std::process::ExitCode> {
    let dir = runs_dir();
    let since = args.since.as_deref().map(since).transpose()?;
    let after = |record: &Record| {
        since.is_none_or(|since| {
            record
                .get("time")
                .and_then(Value::as_str)
                .and_then(parse_time)
                .is_some_and(|time| time >= since)
        })
    };
    let mut out = std::io::stdout().lock();
    let run = match args.run.as_deref() {
        Some("last") => read::runs(&dir)?.first().map(|run| run.id.clone()),
        other => other.map(str::to_string),
    };
    // Watching starts before reading, so a record written in between is
    // not missed.
    let mut follow = args
        .follow
        .then(|| read::Follow::new(&dir, run.as_deref()))
        .transpose()?;
    if follow.is_some() {
        eprintln!("gantry log: following the runs in {}", dir.display());
    }
    match &run {
        Some(id) => {
            let path = read::path_of(&dir, id)
                .filter(|path| path.exists())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no run `{id}` in {}; `gantry log` lists them",
                        dir.display()
                    )
                })?;
            let (records, end) = read::records_from(&path, 0)?;
            for record in records.iter().filter(|record| after(record)) {
                line(&mut out, record, args.json, false)?;
            }
            if let Some(follow) = &mut follow {
                follow.read_up_to(id, end);
            }
        }
        None => {
            let runs: Vec<RunSummary> = read::runs(&dir)?
                .into_iter()
                .filter(|run| run.start.as_ref().is_none_or(&after))
                .collect();
            if runs.is_empty() && !args.follow {
                eprintln!("no runs logged in {}", dir.display());
            }
            for run in runs.iter().rev() {
                summary(&mut out, run, args.json)?;
            }
        }
    }
    out.flush()?;
    if let Some(mut follow) = follow {
        loop {
            let (_, records) = follow.next(Duration::from_secs(3600));
            for record in &records {
                line(&mut out, record, args.json, run.is_none())?;
            }
            out.flush()?;
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `--since`: a time (RFC 3339) or a span back from now (`90s`, `10m`,
/// `2h`, `3d`).
fn since(text: &str) -> anyhow::Result<SystemTime> {
    if let Some(time) = parse_time(text) {
        return Ok(time);
    }
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let seconds = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => 0,
    };
    match number.parse::<u64>() {
        Ok(n) if seconds > 0 => Ok(SystemTime::now() - Duration::from_secs(n * seconds)),
        _ => anyhow::bail!(
            "--since {text}: expected a time (2026-12-02T07:30:00Z) or a span back from now (90s, 10m, 2h, 3d)"
        ),
    }
}

fn summary(out: &mut impl Write, run: &RunSummary, json: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", run.to_json());
    }
    let start = run.start.as_ref();
    let field = |key: &str| {
        start
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .unwrap_or("?")
    };
    let client = start
        .and_then(|s| s.get("client"))
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("-");
    writeln!(
        out,
        "{}  {:<8} {:<19} {:<10} {:<16} {:>5} calls {:>3} refused  {}",
        run.id,
        run.state.word(),
        field("time").get(..19).unwrap_or("?").replace('T', " "),
        field("front"),
        client,
        run.calls,
        run.refused,
        field("workspace"),
    )
}

/// One record as a line: the time, the call it belongs to, and what happened.
fn line(out: &mut impl Write, record: &Record, json: bool, with_run: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", Value::Object(record.clone()));
    }
    let text = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
    let time = text("time").get(11..23).unwrap_or("");
    let call = record
        .get("call")
        .and_then(Value::as_u64)
        .map_or(String::new(), |c| format!("#{c} "));
    let what = match read::kind(record) {
        "run.start" => format!("run started: {} in {}", text("front"), text("workspace")),
        "run.end" => format!("run ended: {}", text("reason")),
        "call.start" => format!(
            "{} by {}{} {}",
            text("tool"),
            text("by"),
            record
                .get("parent")
                .and_then(Value::as_u64)
                .map_or(String::new(), |p| format!(" (in #{p})")),
            first_line(&record.get("args").map(Value::to_string).unwrap_or_default())
        ),
        "call.end" => format!(
            "{} {} in {:.1} ms: {}",
            text("tool"),
            text("outcome"),
            record.get("ms").and_then(Value::as_f64).unwrap_or(0.0),
            first_line(text("text"))
        ),
        "confirm.ask" => format!("asked the person: {}", first_line(text("summary"))),
        "confirm.answer" => format!("the person answered: {}", text("answer")),
        "file.write" => format!(
            "{} {} ({} bytes)",
            text("action"),
            text("path"),
            record.get("size").and_then(Value::as_u64).unwrap_or(0)
        ),
        "sandbox.refused" => format!(
            "sandbox refused {}: {}",
            text("what"),
            first_line(text("detail"))
        ),
        "notice" => format!("notice: {}", first_line(text("text"))),
        "worker.turn" => format!(
            "worker {} turn {}: {}",
            text("worker"),
            record.get("turn").and_then(Value::as_u64).unwrap_or(0),
            first_line(text("text"))
        ),
        "resource.start" => format!("started {}", text("resource")),
        "resource.end" => format!("ended {}", text("resource")),
        other => format!("{other}: {}", first_line(text("text"))),
    };
    let run = if with_run {
        format!("{} ", text("run"))
    } else {
        String::new()
    };
    writeln!(out, "{run}{time}  {call}{what}")
}

/// The first line of `text`, 160 characters at most, with an ellipsis when
/// anything was left out.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let kept = char_prefix(line, 160).unwrap_or(line);
    if kept.len() < text.len() {
        format!("{kept}…")
    } else {
        kept.to_string()
    }
}
