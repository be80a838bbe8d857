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

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;
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
