//! The environment of the commands `shell` runs: the
//! `shellEnvironmentPolicy` settings of both levels, layered by
//! [`EnvPolicy::layered`] so that a workspace's file only tightens what the
//! user's allows unless the user trusts the folder.

use gantry_core::Run;
use gantry_core::settings::Settings;
use gantry_process::EnvPolicy;
use gantry_process::env::SETTINGS_KEY;

/// What the workspace asked for and did not get, in one line.
fn ignored_line(settings: &Settings, ignored: &[String]) -> String {
    let file = settings.workspace_file_shown();
    format!(
        "ignored from {file}: `{SETTINGS_KEY}` {}; a workspace's settings may only tighten it \
         unless `trustedFolders` in ~/.gantry/settings.json lists the folder",
        ignored.join(", ")
    )
}

/// The settings check of the family: a section of the wrong shape, a bad
/// glob, a loosening the workspace may not make.
pub(crate) fn check(settings: &Settings) -> Vec<String> {
    match EnvPolicy::of_settings(settings) {
        Err(error) => vec![error],
        Ok(layered) if layered.ignored.is_empty() => Vec::new(),
        Ok(layered) => vec![ignored_line(settings, &layered.ignored)],
    }
}

/// `gantry status`: what commands inherit, and what was ignored.
pub(crate) fn status(run: &Run) -> Vec<String> {
    let settings = run.settings();
    match EnvPolicy::of_settings(settings) {
        Err(error) => vec![format!("commands do not run: {error}")],
        Ok(layered) => {
            let mut lines = vec![format!(
                "command environment: {}",
                layered.policy.describe()
            )];
            if !layered.ignored.is_empty() {
                lines.push(ignored_line(settings, &layered.ignored));
            }
            lines
        }
    }
}
