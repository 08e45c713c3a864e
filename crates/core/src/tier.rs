//! Approval tiers and approval modes (SPEC §2).
//!
//! A tier says what a tool can do to the world; a surface's tier cap decides
//! whether the tool is visible at all, and the approval mode decides whether
//! the person is asked before it runs.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a tool can do, ordered from harmless to powerful so a cap is a `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// No side effects.
    Read,
    /// Changes files.
    Write,
    /// Starts or drives a process.
    Exec,
}

impl Tier {
    /// Every tier, weakest first.
    pub const ALL: [Tier; 3] = [Tier::Read, Tier::Write, Tier::Exec];

    /// The lowercase name used on the command line and in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Write => "write",
            Tier::Exec => "exec",
        }
    }

    /// The name with its article, for sentences: "a read", "an exec".
    pub fn with_article(self) -> &'static str {
        match self {
            Tier::Read => "a read",
            Tier::Write => "a write",
            Tier::Exec => "an exec",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tier {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read" => Ok(Tier::Read),
            "write" => Ok(Tier::Write),
            "exec" => Ok(Tier::Exec),
            other => Err(format!(
                "unknown tier `{other}`: expected one of read, write, exec"
            )),
        }
    }
}

/// When Gantry itself asks the person before a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Gantry asks nothing; the MCP client's own per-tool prompts decide,
    /// guided by the tools' annotations.
    #[default]
    Client,
    /// Confirm write and exec tools.
    Default,
    /// Confirm exec tools only.
    AutoEdit,
    /// Never confirm.
    Yolo,
    /// Read-only: caps the surface at `read`, so nothing needs confirming.
    Plan,
}

impl ApprovalMode {
    /// How much the mode holds back, for "never wider": a call made on
    /// someone's behalf gets the stricter of two modes. `client` leaves
    /// approval to the MCP client, which confirmed the outer call; for
    /// Gantry it confirms nothing, as `yolo`.
    fn strictness(self) -> u8 {
        match self {
            ApprovalMode::Client | ApprovalMode::Yolo => 0,
            ApprovalMode::AutoEdit => 1,
            ApprovalMode::Default => 2,
            ApprovalMode::Plan => 3,
        }
    }

    /// The stricter of `self` and `other` (`self` when equally strict).
    pub fn stricter(self, other: ApprovalMode) -> ApprovalMode {
        if other.strictness() > self.strictness() {
            other
        } else {
            self
        }
    }

    /// Every mode, for help texts and errors.
    pub const ALL: [ApprovalMode; 5] = [
        ApprovalMode::Client,
        ApprovalMode::Default,
        ApprovalMode::AutoEdit,
        ApprovalMode::Yolo,
        ApprovalMode::Plan,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Client => "client",
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Yolo => "yolo",
            ApprovalMode::Plan => "plan",
        }
    }

    /// Whether a tool of `tier` must be confirmed by a person before it runs.
    pub fn needs_confirmation(self, tier: Tier) -> bool {
        match self {
            ApprovalMode::Client | ApprovalMode::Yolo | ApprovalMode::Plan => false,
            ApprovalMode::Default => tier >= Tier::Write,
            ApprovalMode::AutoEdit => tier >= Tier::Exec,
        }
    }

    /// The tightest tier cap this mode imposes on a surface.
    pub fn cap(self) -> Tier {
        match self {
            ApprovalMode::Plan => Tier::Read,
            _ => Tier::Exec,
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApprovalMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown approval mode `{s}`: expected one of client, default, auto-edit, yolo, plan"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_ordered_by_power() {
        assert!(Tier::Read < Tier::Write && Tier::Write < Tier::Exec);
    }

    #[test]
    fn approval_modes_confirm_what_spec_says() {
        use ApprovalMode::*;
        let table = [
            (Client, [false, false, false]),
            (Default, [false, true, true]),
            (AutoEdit, [false, false, true]),
            (Yolo, [false, false, false]),
            (Plan, [false, false, false]),
        ];
        for (mode, expected) in table {
            for (tier, want) in Tier::ALL.into_iter().zip(expected) {
                assert_eq!(mode.needs_confirmation(tier), want, "{mode} {tier}");
            }
        }
        assert_eq!(Plan.cap(), Tier::Read);
        assert_eq!(Default.cap(), Tier::Exec);
    }

    #[test]
    fn parse_round_trips_and_rejects_unknown() {
        for mode in ApprovalMode::ALL {
            assert_eq!(mode.as_str().parse::<ApprovalMode>().unwrap(), mode);
        }
        for tier in Tier::ALL {
            assert_eq!(tier.as_str().parse::<Tier>().unwrap(), tier);
        }
        assert!(
            "root"
                .parse::<Tier>()
                .unwrap_err()
                .contains("read, write, exec")
        );
        assert!("auto".parse::<ApprovalMode>().is_err());
    }
}
