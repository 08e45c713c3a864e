//! Descriptors passed beside stdio reach the command under its reaper, at
//! the number Gantry had, in both directions; once the command is done
//! its reader sees the end; and no other child gets them.

use std::io::{Read, Write};
use std::time::Duration;

use gantry_process::{Command, Reach, Stdout};
use tokio::io::{AsyncBufReadExt, BufReader};

const BOUND: Duration = Duration::from_secs(10);

#[tokio::test]
async fn passed_pipes_reach_the_command_under_its_reaper_and_close_with_it() {
    gantry_process::reaper::use_program(env!("CARGO_BIN_EXE_gantry-reap"));
    assert_eq!(gantry_process::reaper::reach(), Reach::Descendants);
    let (to_child_reader, mut to_child) = std::io::pipe().unwrap();
    let (mut from_child, from_child_writer) = std::io::pipe().unwrap();
    // bash: dash takes only one-digit descriptors in redirections.
    let mut command = Command::new("bash", &gantry_process::Sandbox::default());
    let input = command.pass_fd(to_child_reader.into());
    let output = command.pass_fd(from_child_writer.into());
    command
        .arg("-c")
        .arg(format!(
            "read line <&{input}; echo \"got $line\" >&{output}; echo on-stdout"
        ))
        .stdout(Stdout::Piped);
    let mut child = command.spawn().unwrap();
    // Gantry's copies go with the command, so only the child holds them.
    drop(command);
    to_child.write_all(b"hello\n").unwrap();
    drop(to_child);
    let read = tokio::task::spawn_blocking(move || {
        let mut got = String::new();
        from_child.read_to_string(&mut got).map(|_| got)
    });
    let got = tokio::time::timeout(BOUND, read)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        got, "got hello\n",
        "the end of output came with the command"
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(BOUND, stdout.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(line.as_deref(), Some("on-stdout"), "stdout stays apart");
    assert!(
        tokio::time::timeout(BOUND, child.wait())
            .await
            .unwrap()
            .unwrap()
            .success()
    );
}

#[tokio::test]
async fn a_passed_descriptor_is_not_inherited_by_other_children() {
    let (_reader, writer) = std::io::pipe().unwrap();
    let mut holder = Command::new("sleep", &gantry_process::Sandbox::default());
    let number = holder.pass_fd(writer.into());
    holder.arg("30");
    let holder_child = holder.spawn().unwrap();
    // Another child spawned while Gantry still holds its copy.
    let mut other = Command::new("sh", &gantry_process::Sandbox::default());
    other
        .arg("-c")
        .arg(format!(
            "if [ -e /proc/self/fd/{number} ]; then echo open; else echo closed; fi"
        ))
        .stdout(Stdout::Piped);
    let mut other = other.spawn().unwrap();
    let mut lines = BufReader::new(other.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(BOUND, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(line.as_deref(), Some("closed"));
    drop(holder_child);
}
