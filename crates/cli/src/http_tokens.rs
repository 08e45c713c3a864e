//! Who may call `gantry mcp --http`: the bearer tokens from the command
//! line, a file and the environment, and the command line's copy of a
//! token blanked once it is read.

use anyhow::Context;

/// The variable of `gantry mcp --http`'s bearer tokens (comma-separated),
/// which no child of Gantry inherits (`gantry_process::env::ALWAYS_REMOVED`).
const TOKEN_VAR: &str = "GANTRY_HTTP_TOKEN";

/// Overwrites each of `secrets` in this process's own argument memory,
/// which `/proc/PID/cmdline` shows to every process of the machine (the
/// commands Gantry runs, confined, among them), once they have been parsed:
/// a `--token` given on the command line is readable only until Gantry
/// starts, not while it serves.
fn blank_in_cmdline(secrets: &[String]) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields 48 and 49 (arg_start, arg_end), counted after the command
    // name's closing parenthesis, which ends field 2.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let address = |field: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(field - 3)
            .ok_or_else(|| anyhow::anyhow!("/proc/self/stat has no field {field}"))?
            .parse()?)
    };
    let (start, end) = (address(48)?, address(49)?);
    // This process's own memory, to blank the token: no file is written.
    #[allow(clippy::disallowed_methods)]
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")
        .context("cannot open /proc/self/mem to blank --token in the command line")?;
    let mut args = vec![0u8; usize::try_from(end.saturating_sub(start))?];
    mem.read_exact_at(&mut args, start)?;
    let mut blanked = args.clone();
    for secret in secrets
        .iter()
        .map(String::as_bytes)
        .filter(|s| !s.is_empty())
    {
        let mut at = 0;
        while let Some(found) = blanked[at..]
            .windows(secret.len())
            .position(|w| w == secret)
        {
            let from = at + found;
            blanked[from..from + secret.len()].fill(b'x');
            at = from + secret.len();
        }
    }
    if blanked != args {
        mem.write_all_at(&blanked, start)
            .context("cannot blank --token in the command line")?;
    }
    Ok(())
}

/// Who may call `gantry mcp --http`: the tokens of `--token`, of
/// `--tokens-file` and of [`TOKEN_VAR`] together, a token made at start
/// when there are none, or anyone with `--no-token`. A token on the command
/// line works, with a warning: every process of the machine can read it.
pub(crate) fn http_access(
    mut tokens: Vec<String>,
    tokens_file: Option<&std::path::Path>,
    no_token: bool,
) -> anyhow::Result<gantry_mcp::Access> {
    let from_env = match std::env::var(TOKEN_VAR) {
        Ok(value) => value,
        Err(std::env::VarError::NotPresent) => String::new(),
        Err(std::env::VarError::NotUnicode(_)) => anyhow::bail!("{TOKEN_VAR} is not UTF-8"),
    };
    if no_token {
        anyhow::ensure!(
            from_env.is_empty(),
            "--no-token, yet {TOKEN_VAR} gives a token: unset it, or leave out --no-token"
        );
        return Ok(gantry_mcp::Access::Open);
    }
    if !tokens.is_empty() {
        eprintln!(
            "gantry: warning: --token puts the token on the command line, where every process \
             of this machine can read it (/proc/PID/cmdline, ps) until Gantry blanks it at \
             start, and in the shell's history: give it with --tokens-file FILE or \
             {TOKEN_VAR} instead"
        );
        blank_in_cmdline(&tokens)?;
    }
    tokens.extend(from_env.split(',').map(String::from));
    if let Some(file) = tokens_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the tokens file {}", file.display()))?;
        let before = tokens.len();
        tokens.extend(
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(String::from),
        );
        anyhow::ensure!(
            tokens.len() > before,
            "the tokens file {} holds no token (one per line)",
            file.display()
        );
    }
    tokens.retain_mut(|token| {
        *token = token.trim().to_string();
        !token.is_empty()
    });
    Ok(if tokens.is_empty() {
        gantry_mcp::Access::Generated
    } else {
        gantry_mcp::Access::Tokens(tokens)
    })
}
