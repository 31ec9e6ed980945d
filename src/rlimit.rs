//! The process's open-file limit (`RLIMIT_NOFILE`): the one place ladder calls getrlimit and
//! setrlimit. The runner raises the soft limit before the load (`runner::limits`); the
//! client names the limit when a request runs out of descriptors (`client::resource`).
#![cfg(unix)]

/// The open-file limits as the OS reports them; [`UNLIMITED`] for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub soft: u64,
    pub hard: u64,
}

/// `RLIM_INFINITY`: no limit.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every unix
pub const UNLIMITED: u64 = libc::RLIM_INFINITY as u64;

/// The soft and hard limits now.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every unix
pub fn open_files() -> std::io::Result<OpenFiles> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed by pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(OpenFiles {
        soft: lim.rlim_cur as u64,
        hard: lim.rlim_max as u64,
    })
}

/// Set both limits (the hard one as [`open_files`] read it, to raise only the soft one).
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every unix
pub fn set_open_files(to: OpenFiles) -> std::io::Result<()> {
    let new = libc::rlimit {
        rlim_cur: to.soft as libc::rlim_t,
        rlim_max: to.hard as libc::rlim_t,
    };
    // SAFETY: setrlimit only reads the struct passed by pointer.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
