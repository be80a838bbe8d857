//! "Did you mean …?": the nearest of a list of names to one that was not found. Shared by
//! `hooks validate` (event and field names), `hooks test` (event names), the matcher checks and
//! unknown slash commands (`session::route`).

/// The candidate `name` was most likely meant as: the same name in another case (`PreToolUse` →
/// `preToolUse`), a candidate it is the start of (`timeout` → `timeoutMs`), or the closest one a
/// couple of typos away. `None` when nothing is close.
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    if lower.is_empty() {
        return None;
    }
    let folded = |candidate: &str| candidate.to_ascii_lowercase();
    if let Some(same) = candidates.clone().into_iter().find(|c| folded(c) == lower) {
        return Some(same);
    }
    if lower.len() >= 4
        && let Some(longer) = candidates
            .clone()
            .into_iter()
            .find(|c| folded(c).starts_with(&lower))
    {
        return Some(longer);
    }
    // Up to one typo in four characters, at most three.
    let allowed = (lower.chars().count() / 4).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (distance(&lower, &folded(c)), c))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// " (did you mean 'X'?)" for a message, or nothing.
pub(crate) fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str> + Clone) -> String {
    nearest(name, candidates)
        .map(|found| format!("; did you mean '{found}'?"))
        .unwrap_or_default()
}

/// Edits between `a` and `b` over characters: an insertion, deletion, substitution, or swap of
/// two neighbours (`reveiw` is one edit from `review`, the commonest typo).
fn distance(a: &str, b: &str) -> usize {
    strsim::osa_distance(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: [&str; 5] = ["id", "event", "command", "timeoutMs", "failClosed"];

    #[test]
    fn case_prefix_and_typos() {
        assert_eq!(
            nearest("PreToolUse", ["preToolUse", "postToolUse"]),
            Some("preToolUse")
        );
        assert_eq!(nearest("timeout", FIELDS), Some("timeoutMs"));
        assert_eq!(nearest("comand", FIELDS), Some("command"));
        assert_eq!(nearest("failclosed", FIELDS), Some("failClosed"));
        assert_eq!(nearest("fail_closed", FIELDS), Some("failClosed"));
        assert_eq!(nearest("matcher", FIELDS), None);
        assert_eq!(nearest("", FIELDS), None);
        assert_eq!(did_you_mean("evnt", FIELDS), "; did you mean 'event'?");
        assert_eq!(did_you_mean("zzz", FIELDS), "");
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(distance("ab", "ab"), 0);
        assert_eq!(distance("reveiw", "review"), 1);
        assert_eq!(nearest("reveiw", ["review", "reload"]), Some("review"));
    }
}
