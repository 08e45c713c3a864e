//! "Did you mean" for tool and parameter names a model got slightly wrong.

/// The candidate closest to `wanted`, if any is close enough to be a likely
/// intent (`readfile` → `read_file`, `file_path` → `path`).
pub fn closest<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted_norm = normalise(wanted);
    candidates
        .into_iter()
        .map(|candidate| {
            let norm = normalise(candidate);
            let mut score = strsim::jaro_winkler(&wanted_norm, &norm);
            if !norm.is_empty() && (wanted_norm.contains(&norm) || norm.contains(&wanted_norm)) {
                score = score.max(0.9);
            }
            (candidate, score)
        })
        .filter(|(_, score)| *score >= 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(candidate, _)| candidate)
}

fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn near_misses_are_suggested_and_strangers_are_not() {
        let tools = ["ls", "read_file", "read_many_files", "glob", "grep"];
        assert_eq!(closest("readfile", tools), Some("read_file"));
        assert_eq!(closest("ReadFile", tools), Some("read_file"));
        assert_eq!(closest("grpe", tools), Some("grep"));
        assert_eq!(closest("deploy_to_prod", tools), None);
        assert_eq!(
            closest("file_path", ["path", "offset", "limit"]),
            Some("path")
        );
    }
}
