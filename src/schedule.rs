//! Jobs on crontab schedules: when each job runs next, catching up once on a run missed while the
//! machine slept or the daemon was down, and never running a job twice at the same time.
//!
//! - [`Schedule`]: an ordinary 5-field crontab line (`*/15 * * * *`, `0 */4 * * *`, names of
//!   days and months, `@daily`-style nicknames), in the machine's local time zone. Parsed with
//!   `croner`, restricted to 5 fields so that a pasted 6-field (seconds) line is an error
//!   rather than a silently different schedule; day-of-month and day-of-week combine with OR, as
//!   in Vixie cron.
//! - [`Timetable`]: the pure bookkeeping, with the clock passed in: which jobs are due, when to
//!   wake next, what ran last. Tested with a controllable clock.
//! - [`WallAlarm`]: the daemon's wake-up: a `timerfd` on the real-time clock with an absolute
//!   deadline, so it fires on time after a suspend (a monotonic sleep would not count the time
//!   asleep) and is cancelled when the clock is set, so the next wake is recomputed. Between two
//!   wakes the daemon does nothing at all.

use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// A schedule that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a crontab schedule: {reason} (use 5 fields: minute hour day month weekday, e.g. `*/15 * * * *`)"
)]
pub struct ScheduleError {
    /// The text given.
    pub text: String,
    /// What is wrong.
    pub reason: String,
}

/// A crontab schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    text: String,
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Schedule {
    /// Parses a 5-field crontab line or a nickname (`@hourly`, `@daily`, `@weekly`,
    /// `@monthly`, `@yearly`).
    ///
    /// ```
    /// use toolsmith::schedule::Schedule;
    /// assert!(Schedule::parse("*/15 * * * *").is_ok());
    /// assert!(Schedule::parse("0 */4 * * MON-FRI").is_ok());
    /// assert!(Schedule::parse("0 0 */4 * * *").is_err()); // six fields: seconds are not cron
    /// ```
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        let trimmed = text.trim();
        let fail = |reason: String| ScheduleError {
            text: text.to_owned(),
            reason,
        };
        if !trimmed.starts_with('@') && trimmed.split_whitespace().count() != 5 {
            return Err(fail(format!(
                "it has {} fields",
                trimmed.split_whitespace().count()
            )));
        }
        if trimmed.starts_with('@') && ["@reboot", "@every"].iter().any(|n| trimmed.starts_with(n))
        {
            return Err(fail("this nickname is not supported".into()));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(trimmed)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Schedule {
            cron,
            text: trimmed.to_owned(),
        })
    }

    /// The first occurrence strictly after `t`, in time zone `tz`.
    pub fn next_after(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let zoned = t.to_zoned(tz.clone());
        self.cron
            .find_next_occurrence(&zoned, false)
            .ok()
            .map(|z: Zoned| z.timestamp())
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// Whether it succeeded.
    pub ok: bool,
    /// A line saying what it did or why it failed.
    pub summary: String,
}

/// One job's state.
#[derive(Debug, Clone)]
pub struct JobState {
    /// The job's name.
    pub name: String,
    /// When it runs.
    pub schedule: Schedule,
    /// Occurrences after this instant are still to run.
    anchor: Timestamp,
    running: bool,
    pending: bool,
    /// When the last run started.
    pub last_started: Option<Timestamp>,
    /// When the last run ended.
    pub last_finished: Option<Timestamp>,
    /// How the last run ended.
    pub last_outcome: Option<Outcome>,
}

impl JobState {
    /// Whether a run is in progress.
    pub fn running(&self) -> bool {
        self.running
    }
}

/// Why a job was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Its schedule came due (possibly a missed occurrence, caught up once).
    Schedule,
    /// Asked for now (a command, or an event such as enough new actions).
    Demand,
    /// It was asked for while running, and runs again now that it is done.
    Pending,
}

/// The jobs and when they run.
#[derive(Debug, Clone)]
pub struct Timetable {
    jobs: Vec<JobState>,
    tz: TimeZone,
}

impl Timetable {
    /// An empty timetable in time zone `tz`.
    pub fn new(tz: TimeZone) -> Self {
        Timetable {
            jobs: Vec::new(),
            tz,
        }
    }

    /// Adds a job. `last_started` is when it last ran (from the store), if ever; `now` anchors a
    /// job that never ran, so it first runs at its next occurrence.
    pub fn add(
        &mut self,
        name: &str,
        schedule: Schedule,
        last_started: Option<Timestamp>,
        now: Timestamp,
    ) {
        self.jobs.retain(|j| j.name != name);
        self.jobs.push(JobState {
            name: name.to_owned(),
            schedule,
            anchor: last_started.unwrap_or(now),
            running: false,
            pending: false,
            last_started,
            last_finished: None,
            last_outcome: None,
        });
    }

    /// The jobs, in the order added.
    pub fn jobs(&self) -> &[JobState] {
        &self.jobs
    }

    fn job_mut(&mut self, name: &str) -> Option<&mut JobState> {
        self.jobs.iter_mut().find(|j| j.name == name)
    }

    /// When `name` runs next: its first occurrence after the last run, or now if that is past.
    pub fn next_run(&self, name: &str, now: Timestamp) -> Option<Timestamp> {
        let job = self.jobs.iter().find(|j| j.name == name)?;
        let next = job.schedule.next_after(job.anchor, &self.tz)?;
        Some(next.max(now))
    }

    /// The earliest instant at which a job that is not running comes due.
    pub fn next_wake(&self) -> Option<Timestamp> {
        self.jobs
            .iter()
            .filter(|j| !j.running)
            .filter_map(|j| j.schedule.next_after(j.anchor, &self.tz))
            .min()
    }

    /// The jobs due at `now`, marked as running. Several missed occurrences make one run. A job
    /// due while it runs is not started again; its due occurrences are simply consumed.
    pub fn take_due(&mut self, now: Timestamp) -> Vec<String> {
        let tz = self.tz.clone();
        let mut due = Vec::new();
        for job in &mut self.jobs {
            let Some(next) = job.schedule.next_after(job.anchor, &tz) else {
                continue;
            };
            if next > now {
                continue;
            }
            job.anchor = now;
            if job.running {
                continue;
            }
            job.running = true;
            job.last_started = Some(now);
            due.push(job.name.clone());
        }
        due
    }

    /// Starts `name` on demand unless it is running; a demand while it runs makes it run once
    /// more when it is done. Returns whether it should start now.
    pub fn demand(&mut self, name: &str, now: Timestamp) -> bool {
        let Some(job) = self.job_mut(name) else {
            return false;
        };
        if job.running {
            job.pending = true;
            return false;
        }
        job.running = true;
        job.last_started = Some(now);
        job.anchor = job.anchor.max(now);
        true
    }

    /// Records the end of a run of `name`. Returns true when a demand came in meanwhile and the
    /// job should start again now (it is then marked running).
    pub fn finish(&mut self, name: &str, now: Timestamp, outcome: Outcome) -> bool {
        let Some(job) = self.job_mut(name) else {
            return false;
        };
        job.running = false;
        job.last_finished = Some(now);
        job.last_outcome = Some(outcome);
        if job.pending {
            job.pending = false;
            job.running = true;
            job.last_started = Some(now);
            job.anchor = job.anchor.max(now);
            return true;
        }
        false
    }
}

/// What woke a [`WallAlarm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The deadline passed.
    Due,
    /// The real-time clock was set (NTP step, manual change): recompute the deadline.
    ClockChanged,
}

/// A timerfd as tokio's reactor wants it (`AsRawFd`).
struct Timer(nix::sys::timerfd::TimerFd);

impl std::os::fd::AsRawFd for Timer {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd;
        self.0.as_fd().as_raw_fd()
    }
}

/// A wake-up at an instant of wall-clock time (see the module's documentation).
pub struct WallAlarm {
    fd: tokio::io::unix::AsyncFd<Timer>,
}

impl WallAlarm {
    /// A new alarm, not set.
    pub fn new() -> std::io::Result<Self> {
        use nix::sys::timerfd::{ClockId, TimerFd, TimerFlags};
        let timer = TimerFd::new(
            ClockId::CLOCK_REALTIME,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // SAFETY: the `TimerFd` owns its descriptor and is moved into the `AsyncFd`, which owns
        // it until it is dropped: the descriptor stays open and the same for that whole time.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(
                Timer(timer),
                tokio::io::Interest::READABLE,
            )
        }
        .map_err(std::io::Error::from)?;
        Ok(WallAlarm { fd })
    }

    /// Waits until the wall clock reads `at` (at once if it is past), or until the clock is set.
    pub async fn sleep_until(&mut self, at: Timestamp) -> std::io::Result<Wake> {
        use nix::sys::time::TimeSpec;
        use nix::sys::timerfd::{Expiration, TimerSetTimeFlags};
        // A zero expiration would disarm the timer: the earliest settable instant is 1 ns.
        let nanos = at.as_nanosecond().max(1);
        let spec = TimeSpec::new(
            (nanos / 1_000_000_000) as libc::time_t,
            (nanos % 1_000_000_000) as libc::c_long,
        );
        self.fd.get_ref().0.set(
            Expiration::OneShot(spec),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME | TimerSetTimeFlags::TFD_TIMER_CANCEL_ON_SET,
        )?;
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            match nix::unistd::read(&self.fd.get_ref().0, &mut buf) {
                Ok(_) => return Ok(Wake::Due),
                Err(nix::errno::Errno::ECANCELED) => return Ok(Wake::ClockChanged),
                Err(nix::errno::Errno::EAGAIN) => guard.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The machine's local time zone, UTC when it cannot be determined.
pub fn local_time_zone() -> TimeZone {
    TimeZone::try_system().unwrap_or(TimeZone::UTC)
}

/// A human duration such as `3 min` or `2 h 5 min`, for `toolsmith schedule`.
pub fn until(from: Timestamp, to: Timestamp) -> String {
    let secs = to.as_second().saturating_sub(from.as_second()).max(0) as u64;
    let d = Duration::from_secs(secs);
    match d.as_secs() {
        0..60 => format!("{} s", d.as_secs()),
        60..3600 => format!("{} min", d.as_secs() / 60),
        _ => format!("{} h {} min", d.as_secs() / 3600, (d.as_secs() % 3600) / 60),
    }
}

/// A job's run, as recorded in the store for `toolsmith schedule`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobRun {
    /// The job.
    pub job: String,
    /// What started it: `schedule`, `demand` or `pending`.
    pub trigger: String,
    /// When it started (Unix ms).
    pub started_ms: i64,
    /// When it ended (Unix ms); `None` while it runs, or when the daemon died during it.
    pub finished_ms: Option<i64>,
    /// Whether it succeeded.
    pub ok: Option<bool>,
    /// What it did, or why it failed.
    pub summary: Option<String>,
}

/// Records the start of a run of `job`; returns the run's id for [`record_end`].
pub fn record_start(
    conn: &rusqlite::Connection,
    job: &str,
    trigger: &str,
    at: Timestamp,
) -> Result<i64, crate::store::StoreError> {
    conn.prepare_cached("INSERT INTO job_runs (job, trigger, started_ms) VALUES (?1, ?2, ?3)")?
        .execute(rusqlite::params![job, trigger, at.as_millisecond()])?;
    Ok(conn.last_insert_rowid())
}

/// Records how run `id` ended.
pub fn record_end(
    conn: &rusqlite::Connection,
    id: i64,
    at: Timestamp,
    outcome: &Outcome,
) -> Result<(), crate::store::StoreError> {
    conn.prepare_cached(
        "UPDATE job_runs SET finished_ms = ?2, ok = ?3, summary = ?4 WHERE id = ?1",
    )?
    .execute(rusqlite::params![
        id,
        at.as_millisecond(),
        outcome.ok,
        outcome.summary
    ])?;
    Ok(())
}

/// When `job` last started (`None` when it never ran).
pub fn last_started(
    conn: &rusqlite::Connection,
    job: &str,
) -> Result<Option<Timestamp>, crate::store::StoreError> {
    let ms: Option<i64> = conn
        .prepare_cached("SELECT max(started_ms) FROM job_runs WHERE job = ?1")?
        .query_row([job], |r| r.get(0))?;
    Ok(ms.and_then(|ms| Timestamp::from_millisecond(ms).ok()))
}

/// The newest run of each job.
pub fn last_runs(conn: &rusqlite::Connection) -> Result<Vec<JobRun>, crate::store::StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT job, trigger, started_ms, finished_ms, ok, summary FROM job_runs
         WHERE id IN (SELECT max(id) FROM job_runs GROUP BY job) ORDER BY job",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(JobRun {
                job: r.get(0)?,
                trigger: r.get(1)?,
                started_ms: r.get(2)?,
                finished_ms: r.get(3)?,
                ok: r.get(4)?,
                summary: r.get(5)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    fn ok() -> Outcome {
        Outcome {
            ok: true,
            summary: "done".into(),
        }
    }

    #[test]
    fn five_field_lines_nicknames_and_errors() {
        for good in [
            "*/15 * * * *",
            "0 */4 * * *",
            "30 2 * * SUN",
            "0 9 1-7 * MON",
            "@daily",
            "@hourly",
        ] {
            assert!(Schedule::parse(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("* * * *", "4 fields"),
            ("0 0 */4 * * *", "6 fields"),
            ("61 * * * *", ""),
            ("@reboot", "not supported"),
            ("every 5 minutes", "3 fields"),
            ("", "0 fields"),
        ] {
            let err = Schedule::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(err.contains("5 fields"), "{err}");
        }
    }

    #[test]
    fn next_occurrences_follow_crontab_rules() {
        let utc = TimeZone::UTC;
        let every_15 = Schedule::parse("*/15 * * * *").expect("parse");
        assert_eq!(
            every_15.next_after(at("2026-11-22T10:07:30Z"), &utc),
            Some(at("2026-11-22T10:15:00Z"))
        );
        assert_eq!(
            every_15.next_after(at("2026-11-22T10:15:00Z"), &utc),
            Some(at("2026-11-22T10:30:00Z")),
            "strictly after"
        );
        let four_hourly = Schedule::parse("0 */4 * * *").expect("parse");
        assert_eq!(
            four_hourly.next_after(at("2026-11-22T21:00:00Z"), &utc),
            Some(at("2026-11-23T00:00:00Z"))
        );
        // Day of week: 0 and 7 are Sunday, as in crontab(5). 2026-11-22 is a Sunday.
        for sunday in ["0 12 * * 0", "0 12 * * 7", "0 12 * * SUN"] {
            let s = Schedule::parse(sunday).expect("parse");
            assert_eq!(
                s.next_after(at("2026-11-21T00:00:00Z"), &utc),
                Some(at("2026-11-22T12:00:00Z")),
                "{sunday}"
            );
        }
        // Day of month OR day of week when both are restricted (Vixie cron).
        let either = Schedule::parse("0 0 1 * MON").expect("parse");
        assert_eq!(
            either.next_after(at("2026-11-22T12:00:00Z"), &utc),
            Some(at("2026-11-23T00:00:00Z")),
            "Monday the 23rd comes before the 1st"
        );
        // Local time: 09:00 in Paris is 08:00 UTC in winter.
        let paris = TimeZone::get("Europe/Paris").expect("tzdb");
        let nine = Schedule::parse("0 9 * * *").expect("parse");
        assert_eq!(
            nine.next_after(at("2026-11-22T00:00:00Z"), &paris),
            Some(at("2026-11-22T08:00:00Z"))
        );
    }

    #[test]
    fn a_job_runs_at_its_occurrences_and_never_overlaps_itself() {
        let mut t = Timetable::new(TimeZone::UTC);
        let start = at("2026-11-22T10:07:00Z");
        t.add(
            "mine",
            Schedule::parse("*/15 * * * *").expect("parse"),
            None,
            start,
        );
        assert_eq!(t.next_wake(), Some(at("2026-11-22T10:15:00Z")));
        assert!(t.take_due(at("2026-11-22T10:14:59Z")).is_empty());
        assert_eq!(t.take_due(at("2026-11-22T10:15:00Z")), ["mine"]);
        // Still running at the next occurrence: not started twice, and no wake while it runs.
        assert_eq!(t.next_wake(), None);
        assert!(t.take_due(at("2026-11-22T10:31:00Z")).is_empty());
        assert!(!t.finish("mine", at("2026-11-22T10:32:00Z"), ok()));
        // The 10:30 occurrence was consumed while it ran; the next is 10:45.
        assert_eq!(t.next_wake(), Some(at("2026-11-22T10:45:00Z")));
        let job = &t.jobs()[0];
        assert_eq!(job.last_started, Some(at("2026-11-22T10:15:00Z")));
        assert_eq!(job.last_outcome, Some(ok()));
    }

    #[test]
    fn missed_runs_are_caught_up_once() {
        let mut t = Timetable::new(TimeZone::UTC);
        // Last ran at 08:00; the machine slept through 12:00 and 16:00 and wakes at 17:10.
        t.add(
            "health",
            Schedule::parse("0 */4 * * *").expect("parse"),
            Some(at("2026-11-22T08:00:00Z")),
            at("2026-11-22T17:10:00Z"),
        );
        assert_eq!(t.next_wake(), Some(at("2026-11-22T12:00:00Z")), "overdue");
        assert_eq!(
            t.next_run("health", at("2026-11-22T17:10:00Z")),
            Some(at("2026-11-22T17:10:00Z")),
            "an overdue job runs now"
        );
        assert_eq!(t.take_due(at("2026-11-22T17:10:00Z")), ["health"]);
        t.finish("health", at("2026-11-22T17:11:00Z"), ok());
        // One catch-up run, not two: the next is the regular 20:00.
        assert!(t.take_due(at("2026-11-22T17:12:00Z")).is_empty());
        assert_eq!(t.next_wake(), Some(at("2026-11-22T20:00:00Z")));
    }

    #[test]
    fn demands_while_running_coalesce_into_one_more_run() {
        let mut t = Timetable::new(TimeZone::UTC);
        let now = at("2026-11-22T10:00:00Z");
        t.add(
            "mine",
            Schedule::parse("*/15 * * * *").expect("parse"),
            None,
            now,
        );
        assert!(t.demand("mine", now));
        assert!(!t.demand("mine", now), "running: not started twice");
        assert!(!t.demand("mine", now));
        assert!(
            t.finish("mine", at("2026-11-22T10:01:00Z"), ok()),
            "one more run"
        );
        assert!(
            !t.finish("mine", at("2026-11-22T10:02:00Z"), ok()),
            "only one"
        );
        assert!(!t.demand("unknown", now));
    }

    #[tokio::test]
    async fn the_wall_alarm_fires_at_its_instant() {
        let mut alarm = WallAlarm::new().expect("timerfd");
        let past = Timestamp::now() - jiff::SignedDuration::from_secs(5);
        assert_eq!(alarm.sleep_until(past).await.expect("wake"), Wake::Due);
        let soon = Timestamp::now() + jiff::SignedDuration::from_millis(50);
        assert_eq!(alarm.sleep_until(soon).await.expect("wake"), Wake::Due);
        assert!(Timestamp::now() >= soon);
    }

    #[test]
    fn the_last_start_of_a_job_is_read_from_its_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("store");
        let (health, sync) = store
            .call_blocking(|conn| {
                record_start(conn, "health", "schedule", at("2026-03-01T10:00:00Z"))?;
                let id = record_start(conn, "health", "demand", at("2026-03-02T10:00:00Z"))?;
                record_end(conn, id, at("2026-03-02T10:00:05Z"), &ok())?;
                Ok((last_started(conn, "health")?, last_started(conn, "sync")?))
            })
            .expect("store");
        assert_eq!(health, Some(at("2026-03-02T10:00:00Z")));
        assert_eq!(sync, None);
    }
}
