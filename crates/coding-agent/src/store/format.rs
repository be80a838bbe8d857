//! Human output of `elph sessions`: a table of id, last update, entry count and title.

use time::OffsetDateTime;

use super::SessionInfo;
use super::db::one_line;

/// Widest title shown in the table.
const TITLE_WIDTH: usize = 60;

/// The sessions as an aligned table (newest first, as given), or a one-line note when there are
/// none. `now` is when the command runs, for "5 min ago".
pub fn format_sessions(sessions: &[SessionInfo], now: OffsetDateTime) -> String {
    if sessions.is_empty() {
        return "No sessions for this project yet.\n".to_string();
    }
    let rows: Vec<[String; 4]> = sessions
        .iter()
        .map(|session| {
            [
                one_line(&session.id, usize::MAX),
                ago(session.updated_at, now),
                session.entry_count.to_string(),
                session
                    .title
                    .as_deref()
                    .map_or_else(|| "(no prompt yet)".to_string(), |t| one_line(t, TITLE_WIDTH)),
            ]
        })
        .collect();
    let header = ["ID", "UPDATED", "ENTRIES", "TITLE"].map(String::from);
    let width = |column: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (id, updated, entries) = (width(0), width(1), width(2));
    let mut out = String::new();
    for [c0, c1, c2, c3] in std::iter::once(&header).chain(&rows) {
        let line = format!("{c0:<id$}  {c1:<updated$}  {c2:>entries$}  {c3}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// How long before `now` a time was, in the largest unit that fits; a date past a week.
pub fn ago(then: OffsetDateTime, now: OffsetDateTime) -> String {
    let seconds = (now - then).whole_seconds();
    let plural = |n: i64, unit: &str| format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" });
    match seconds {
        ..60 => "just now".to_string(),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => plural(seconds / 3_600, "hour"),
        86_400..604_800 => plural(seconds / 86_400, "day"),
        _ => format!("{}-{:02}-{:02}", then.year(), u8::from(then.month()), then.day()),
    }
}

/// The shortest start of each id (at least `MIN_SHOWN` characters) that no other id in `ids`
/// shares, in the same order. Session ids are UUIDv7, whose first eight characters are the top of
/// a millisecond clock: every session begun within the same ~65 s shares them, so a fixed
/// eight-character id would show two sessions of one sitting as the same.
pub fn distinct_prefixes(ids: &[&str]) -> Vec<String> {
    const MIN_SHOWN: usize = 8;
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let mut sorted: Vec<&str> = ids.to_vec();
    sorted.sort_unstable();
    ids.iter()
        .map(|id| {
            // The neighbours in sorted order share the longest starts with `id`.
            let at = sorted.partition_point(|other| other < id);
            let before = at.checked_sub(1).and_then(|i| sorted.get(i));
            let after = sorted.get(at + 1).filter(|other| *other != id);
            let shared = [before, after]
                .into_iter()
                .flatten()
                .map(|other| common(id, other))
                .max()
                .unwrap_or(0);
            id.chars().take((shared + 1).max(MIN_SHOWN)).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    #[test]
    fn ids_are_shown_as_long_as_it_takes_to_tell_them_apart() {
        let ids = [
            "019ad9f3-1c2a-7e01-8000-aaaaaaaaaaaa",
            "019ad9f3-1c2a-7e02-8000-bbbbbbbbbbbb",
            "019ad9f4-0000-7000-8000-cccccccccccc",
            "019ad9f3-1d00-7000-8000-dddddddddddd",
        ];
        assert_eq!(
            distinct_prefixes(&ids),
            [
                "019ad9f3-1c2a-7e01",
                "019ad9f3-1c2a-7e02",
                "019ad9f4",
                "019ad9f3-1d"
            ]
        );
        assert_eq!(distinct_prefixes(&["abc"]), ["abc"]);
        assert_eq!(distinct_prefixes(&["0123456789", "x"]), ["01234567", "x"]);
        // The same id twice (never in a store) still gets a start, not a panic.
        assert_eq!(
            distinct_prefixes(&["aaaaaaaaaa", "aaaaaaaaaa"]),
            ["aaaaaaaa", "aaaaaaaa"]
        );
    }
    use time::macros::datetime;

    #[test]
    fn ages_read_naturally() {
        let now = datetime!(2025-06-10 12:00 UTC);
        assert_eq!(
            ago(now + Duration::seconds(5), now),
            "just now",
            "clock skew is not negative"
        );
        assert_eq!(ago(now - Duration::seconds(59), now), "just now");
        assert_eq!(ago(now - Duration::minutes(5), now), "5 min ago");
        assert_eq!(ago(now - Duration::hours(1), now), "1 hour ago");
        assert_eq!(ago(now - Duration::hours(23), now), "23 hours ago");
        assert_eq!(ago(now - Duration::days(2), now), "2 days ago");
        assert_eq!(ago(now - Duration::days(30), now), "2025-05-11");
    }
}
