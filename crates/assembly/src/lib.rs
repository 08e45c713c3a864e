//! Run assembly: the one list of tool families, and the one way a run is
//! opened with all of them. Both front ends (`gantry mcp`, the CLI) and
//! library users build runs here, so none of them names a family or a
//! tool.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use gantry_assembly::RunConfig;
//! use gantry_core::Surface;
//!
//! let config = RunConfig { root: ".".into(), surface: Surface::default(), settings_files: vec![] };
//! let run = gantry_assembly::build_run(&config, None, None).await?;
//! let listing = run.call("ls", serde_json::json!({"path": "."})).await;
//! # let _ = listing;
//! # Ok(())
//! # }
//! ```

mod log;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
/// For the binary's `main`, which names no family.
pub use gantry_ast::use_mimalloc_for_trees;
use gantry_core::runlog::Origin;
use gantry_core::{
    Answer, ApprovalMode, Confirmation, Family, Human, HumanError, Question, Run, RunBuilder,
    Settings, SettingsError, Surface, Tier, Workspace,
};

/// Settings keys the assembly and the core read (not a family's).
const OWN_SETTINGS: &[&str] = &[
    EXTRA_ROOTS,
    gantry_core::settings::TRUSTED_FOLDERS,
    log::KEY,
];

/// The settings key of folders the tools may reach beyond the workspace.
const EXTRA_ROOTS: &str = "extraRoots";

/// Every tool family, in wiring order: the one list of them.
pub fn families() -> Vec<&'static dyn Family> {
    vec![
        &gantry_fs::FAMILY,
        &gantry_edit::FAMILY,
        &gantry_memory::FAMILY,
        &gantry_lsp::LspFamily,
        &gantry_ast::FAMILY,
        &gantry_web::FAMILY,
        &gantry_shell::FAMILY,
        &gantry_ask::FAMILY,
        &gantry_kernel::FAMILY,
        &gantry_dap::FAMILY,
        &gantry_discovery::FAMILY,
        &gantry_workers::FAMILY,
    ]
}

/// What a front end asks for when it opens a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The workspace root.
    pub root: PathBuf,
    /// Tier cap and approval mode.
    pub surface: Surface,
    /// Settings files the user named (`gantry --settings FILE`), read at
    /// the user level after `~/.gantry/settings.json`.
    pub settings_files: Vec<PathBuf>,
}

/// Every settings key some part of Gantry reads.
fn known_settings() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = OWN_SETTINGS.to_vec();
    for family in families() {
        keys.extend(family.settings_keys());
    }
    keys
}

/// What is wrong with `settings`, as warnings: keys no family reads
/// (likely typos, with the known keys), and each family's own findings.
pub fn settings_warnings(settings: &Settings) -> Vec<String> {
    let known = known_settings();
    let mut warnings: Vec<String> = settings
        .unknown_keys(&known)
        .into_iter()
        .map(|key| format!("unknown settings key `{key}` (known: {})", known.join(", ")))
        .collect();
    warnings.extend(trusted_folders_warning(settings));
    if let gantry_core::trust::WorkspaceTrust::Withheld(why) = settings.workspace_trust() {
        warnings.push(why.clone());
    }
    if let Ok((_, ignored)) = extra_roots(settings) {
        warnings.extend(
            settings.ignored_untrusted(&ignored, "it widens what the tools and the sandbox reach"),
        );
    }
    for family in families() {
        warnings.extend(family.check_settings(settings));
    }
    warnings
}

/// Folders beyond the workspace the tools may reach: a workspace's own
/// list counts only in a trusted folder (a cloned repository could name
/// `/`); also returns what was ignored.
fn extra_roots(settings: &Settings) -> Result<(Vec<PathBuf>, Vec<String>), SettingsError> {
    settings.section_honoured(EXTRA_ROOTS, |_| true)
}

/// `trustedFolders` is read from the user's file only, as a list of
/// absolute paths (or `~/`); anything else trusts nothing, and says so.
fn trusted_folders_warning(settings: &Settings) -> Option<String> {
    use gantry_core::settings::TRUSTED_FOLDERS;
    let in_workspace = settings.workspace_section::<Vec<String>>(TRUSTED_FOLDERS);
    if !matches!(in_workspace, Ok(None)) {
        return Some(format!(
            "`{TRUSTED_FOLDERS}` in a workspace's settings is ignored: only ~/.gantry/settings.json trusts a folder"
        ));
    }
    settings
        .user_section::<Vec<String>>(TRUSTED_FOLDERS)
        .err()
        .map(|e| format!("{e}; no folder is trusted"))
}

/// Opens the workspace and loads its settings, logging what is wrong with
/// them. Opening a root first finishes or rolls back a write a dead
/// process left behind, before any tool reads a file.
pub fn open(root: &Path) -> anyhow::Result<(Workspace, Settings)> {
    open_with(root, &[])
}

/// [`open`], with settings files the user named read at the user level
/// (see [`RunConfig::settings_files`]).
pub fn open_with(root: &Path, settings_files: &[PathBuf]) -> anyhow::Result<(Workspace, Settings)> {
    let settings = Settings::load_with(settings_files, root)?;
    for warning in settings_warnings(&settings) {
        tracing::warn!("{warning}");
    }
    let (extra, _ignored) = extra_roots(&settings)?;
    let (workspace, _recovered) = gantry_core::write::open_workspace(root)
        .with_context(|| format!("cannot open workspace {}", root.display()))?;
    Ok((workspace.with_extra_roots(extra), settings))
}

/// Builds a run with every family, wired in order; `human` is the person
/// the front end can reach, if any. A run with an `origin` is recorded in
/// the run log (unless the user's `log.enabled` is false); one without
/// (`gantry tools`, `gantry status`) is not.
pub async fn build_run(
    config: &RunConfig,
    human: Option<Arc<dyn Human>>,
    origin: Option<Origin>,
) -> anyhow::Result<Run> {
    let (workspace, settings) = open_with(&config.root, &config.settings_files)?;
    let log = match origin {
        Some(origin) => log::open(&settings).map(|log| (log, origin)),
        None => None,
    };
    let mut builder = Run::builder(workspace)
        .settings(settings)
        .surface(config.surface);
    if let Some((log, origin)) = log {
        builder = builder.log(log, origin);
    }
    if let Some(human) = human {
        builder = builder.human(human);
    }
    Ok(wire_all(builder).await?.build())
}

/// A run holding every tool Gantry has, on default settings (plus a
/// placeholder worker tier, without which worker mode's tools are not
/// registered) and the full surface, with a stand-in person so that tools
/// that ask one are wired too: the tool reference (`gantry tools
/// --markdown`) is then the same on every machine, whatever its settings,
/// terminal or root. It is only listed, never called.
pub async fn reference_run(root: &Path) -> anyhow::Result<Run> {
    let workspace = Workspace::new(root)
        .with_context(|| format!("cannot open workspace {}", root.display()))?;
    let settings = Settings::from_value(gantry_workers::reference_settings())?;
    let builder = Run::builder(workspace)
        .settings(settings)
        .surface(Surface::new(Tier::Exec, ApprovalMode::Client))
        .human(Arc::new(NoOneHere));
    Ok(wire_all(builder).await?.build())
}

/// Wires every family into `builder`, with the instructions each adds.
async fn wire_all(mut builder: RunBuilder) -> anyhow::Result<RunBuilder> {
    for family in families() {
        if let Some(text) = family.instructions(&builder) {
            builder = builder.instructions(text);
        }
        builder = family
            .wire(builder)
            .await
            .map_err(|e| anyhow::anyhow!("cannot wire the {} family: {e}", family.name()))?;
    }
    Ok(builder)
}

/// Runs `brief` headless as one background worker of `run` to its end
/// (`gantry agent -p BRIEF`): worker mode's agent loop, on `tier` or the
/// default one. An error says why it could not start.
pub async fn run_agent(
    run: &Run,
    brief: &str,
    tier: Option<&str>,
) -> Result<gantry_workers::Headless, String> {
    gantry_workers::headless(run, brief, tier).await
}

/// What each family says about itself in `run` (for `gantry status`):
/// the family's name and its lines, for families that have any.
pub async fn status(run: &Run) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    for family in families() {
        let lines = family.status(run).await;
        if !lines.is_empty() {
            out.push((family.name(), lines));
        }
    }
    out
}

/// The person of [`reference_run`]: present so that every tool is wired,
/// and unable to answer should anything ever ask.
struct NoOneHere;

#[gantry_core::async_trait]
impl Human for NoOneHere {
    async fn confirm(&self, _tool: &str, _confirmation: &Confirmation) -> Result<bool, HumanError> {
        Err(HumanError::Unavailable(
            "the tool reference has no person".into(),
        ))
    }

    async fn ask(&self, _question: &Question) -> Result<Answer, HumanError> {
        Err(HumanError::Unavailable(
            "the tool reference has no person".into(),
        ))
    }
}
