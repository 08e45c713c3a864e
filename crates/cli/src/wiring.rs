//! Wires a run with every tool family; the one place that knows them all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use gantry_core::{
    Answer, ApprovalMode, Confirmation, Human, HumanError, Question, Run, RunBuilder, Settings,
    Surface, Tier, Workspace,
};

/// Top-level settings keys some part of Gantry reads; anything else is
/// warned about as likely a typo.
const KNOWN_SETTINGS: &[&str] = &[
    "extraRoots",
    gantry_ask::SETTINGS_SECTION,
    gantry_web::SETTINGS_SECTION,
    "lsp",
    "ast",
];

/// What a front end asks for when it opens a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The workspace root.
    pub root: PathBuf,
    /// Tier cap and approval mode.
    pub surface: Surface,
}

/// Opens the workspace and loads its settings, reporting unknown keys.
pub fn open(root: &Path) -> anyhow::Result<(Workspace, Settings)> {
    let settings = Settings::load(root)?;
    for key in settings.unknown_keys(KNOWN_SETTINGS) {
        tracing::warn!(
            "unknown settings key `{key}` (known: {})",
            KNOWN_SETTINGS.join(", ")
        );
    }
    let extra: Vec<PathBuf> = settings.section("extraRoots")?;
    // Opening a root first finishes or rolls back a write a dead process
    // left behind, before any tool reads a file.
    let (workspace, _recovered) = gantry_core::write::open_workspace(root)
        .with_context(|| format!("cannot open workspace {}", root.display()))?;
    let workspace = workspace.with_extra_roots(extra);
    Ok((workspace, settings))
}

/// Builds a run with every family whose resource can be wired here.
pub fn build_run(config: &RunConfig, human: Option<Arc<dyn Human>>) -> anyhow::Result<Run> {
    let (workspace, settings) = open(&config.root)?;
    let instructions = gantry_memory::instructions(workspace.root());
    let mut builder = Run::builder(workspace)
        .settings(settings)
        .surface(config.surface)
        .instructions(instructions);
    if let Some(human) = human {
        builder = builder.human(human);
    }
    Ok(register_families(builder).build())
}

/// A run holding every tool Gantry has, on default settings and the full
/// surface, with a stand-in person so that `ask_user` is wired too: the
/// tool reference (`gantry tools --markdown`) is then the same on every
/// machine, whatever its settings, terminal or root. It is only listed,
/// never called.
pub fn reference_run(root: &Path) -> anyhow::Result<Run> {
    let workspace = Workspace::new(root)
        .with_context(|| format!("cannot open workspace {}", root.display()))?;
    let builder = Run::builder(workspace)
        .settings(Settings::default())
        .surface(Surface::new(Tier::Exec, ApprovalMode::Client))
        .human(Arc::new(NoOneHere));
    Ok(register_families(builder).build())
}

/// Registers every family: the one list of them.
fn register_families(builder: RunBuilder) -> RunBuilder {
    let builder = gantry_fs::register(builder);
    let builder = gantry_edit::register(builder);
    let builder = gantry_memory::register(builder);
    let builder = gantry_lsp::register(builder);
    let builder = gantry_ast::register(builder);
    let builder = gantry_web::register(builder);
    let builder = gantry_shell::register(builder);
    gantry_ask::register(builder)
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
