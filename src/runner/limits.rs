//! Process limits checked before any load: enough file descriptors for the connections a
//! rung may open. A rung that runs out of descriptors fails its requests with "Too many open
//! files" connect errors, which would read as a server problem; so the soft limit is raised
//! (up to the hard limit) or the run stops with a clear error before the load starts.

#[cfg(unix)]
use crate::rlimit;

/// Descriptors kept free for everything that is not a request connection (files, runtime).
const HEADROOM: u64 = 64;

/// What [`ensure_fds`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdLimit {
    /// The soft limit already covered the need.
    Enough,
    /// The soft limit was raised from `from` to `to`.
    Raised { from: u64, to: u64 },
    /// The need exceeds the hard limit; the soft limit was raised to it anyway.
    TooLow { need: u64, hard: u64 },
}

/// Descriptors a rung of `concurrency` in-flight requests needs: one connection each (two
/// when the built-in simulator serves them from this process), plus headroom.
pub fn fds_needed(concurrency: u64, in_process_sim: bool) -> u64 {
    let per = if in_process_sim { 2 } else { 1 };
    concurrency.saturating_mul(per).saturating_add(HEADROOM)
}

/// Descriptors a run needs before its first connection: the standard streams, the async
/// runtime, signal handling, the scenario, tokenizer and result files.
pub const STARTUP_FDS: u64 = 16;

/// Raises the soft open-file limit to [`STARTUP_FDS`] if it is lower, or says what to do:
/// below it the process fails in odd places (the runtime, signal handling, a result file)
/// before the first request, where no error could name the limit.
pub fn ensure_startup_fds() -> Result<(), StartupFdsTooLow> {
    match ensure_fds(STARTUP_FDS) {
        Ok(FdLimit::TooLow { hard, .. }) => Err(StartupFdsTooLow { hard }),
        _ => Ok(()),
    }
}

/// The open-file hard limit is below [`STARTUP_FDS`]: the process cannot start a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the open-file limit (ulimit -n) is {hard}, too low for ladder to start: it needs \
     about {STARTUP_FDS} descriptors before its first connection, plus one per request in \
     flight; raise it (`ulimit -n 65536`, or LimitNOFILE= for a service)"
)]
pub struct StartupFdsTooLow {
    /// The hard limit.
    pub hard: u64,
}

/// Idle kept-alive connections the client may hold: at most `wanted`, and few enough that
/// the descriptors of the headroom stay free when every connection is idle (after a rung,
/// the results files must still open). At least 1.
pub fn idle_connections(wanted: usize) -> usize {
    match open_files_soft() {
        Some(soft) => wanted.min(soft.saturating_sub(HEADROOM) as usize).max(1),
        None => wanted.max(1),
    }
}

/// The soft `RLIMIT_NOFILE` (`None`: unlimited or unknown).
#[cfg(unix)]
fn open_files_soft() -> Option<u64> {
    let soft = rlimit::open_files().ok()?.soft;
    (soft != rlimit::UNLIMITED).then_some(soft)
}

#[cfg(not(unix))]
fn open_files_soft() -> Option<u64> {
    None
}

/// Makes the soft `RLIMIT_NOFILE` at least `need` when the hard limit allows it.
#[cfg(unix)]
pub fn ensure_fds(need: u64) -> std::io::Result<FdLimit> {
    let rlimit::OpenFiles { soft, hard } = rlimit::open_files()?;
    if soft == rlimit::UNLIMITED || soft >= need {
        return Ok(FdLimit::Enough);
    }
    let target = if hard == rlimit::UNLIMITED {
        need
    } else {
        need.min(hard)
    };
    if target > soft {
        rlimit::set_open_files(rlimit::OpenFiles { soft: target, hard })?;
    }
    if target < need {
        return Ok(FdLimit::TooLow { need, hard });
    }
    Ok(FdLimit::Raised {
        from: soft,
        to: target,
    })
}

/// Non-unix: nothing to raise.
#[cfg(not(unix))]
pub fn ensure_fds(_need: u64) -> std::io::Result<FdLimit> {
    Ok(FdLimit::Enough)
}

/// One malloc arena for the whole process (glibc), unless `MALLOC_ARENA_MAX` is set. A
/// request's buffers are allocated on the runtime's worker thread and its record is freed on
/// the collector's; with an arena per thread glibc keeps each arena's freed chunks apart, and
/// a soak's RSS crept by about 0.35 MiB a minute at 1,000 req/s (with one arena: flat, at the
/// same CPU; BENCHMARKS.md, "Soak"). Call before any thread starts: threads started later
/// share the arenas that exist.
pub fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if arena_max_wanted(std::env::var_os("MALLOC_ARENA_MAX").as_deref()).is_some() {
        // SAFETY: mallopt sets one malloc parameter; it reads and writes no caller memory.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// The arena cap to set: one, unless the user chose one with `MALLOC_ARENA_MAX`.
fn arena_max_wanted(env: Option<&std::ffi::OsStr>) -> Option<i32> {
    env.is_none().then_some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_counts_both_ends_for_the_in_process_sim() {
        assert_eq!(fds_needed(100, false), 164);
        assert_eq!(fds_needed(100, true), 264);
        assert_eq!(fds_needed(u64::MAX, true), u64::MAX);
    }

    #[test]
    fn idle_connections_leave_the_headroom_free() {
        // The test process's own limit: whatever it is, the cap leaves 64 descriptors.
        let n = idle_connections(usize::MAX);
        if let Some(soft) = open_files_soft() {
            assert_eq!(n as u64, soft.saturating_sub(HEADROOM).max(1));
        }
        assert_eq!(idle_connections(0), 1);
        assert!(idle_connections(3) <= 3);
    }

    #[test]
    fn the_users_malloc_arena_max_is_left_alone() {
        assert_eq!(arena_max_wanted(None), Some(1));
        assert_eq!(arena_max_wanted(Some(std::ffi::OsStr::new("4"))), None);
    }

    #[test]
    fn a_small_need_is_already_met() {
        assert_eq!(ensure_fds(8).unwrap(), FdLimit::Enough);
    }
}
