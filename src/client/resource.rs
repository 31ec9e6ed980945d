//! Failures of the client's own resources (open files, local ports, socket memory), told
//! apart from the server's by the OS error at the bottom of an error's source chain.

use std::error::Error as StdError;

/// The process's open-file limit, soft and hard (`None` for unlimited or unknown).
#[cfg(unix)]
fn open_file_limit() -> Option<(u64, u64)> {
    let l = crate::rlimit::open_files().ok()?;
    (l.soft != crate::rlimit::UNLIMITED).then_some((l.soft, l.hard))
}

/// The machine's range of local (ephemeral) ports, as Linux reports it.
fn local_port_range() -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|p| p.parse::<u32>().ok());
    Some((it.next()??, it.next()??))
}

/// The client's own limits as they stand now, for messages about running out of them:
/// "open-file limit (ulimit -n) 1024 (hard 4096); local ports 32768-60999 (28232 per
/// server address)". Empty when none can be read.
pub fn client_limits() -> String {
    let mut parts = Vec::new();
    #[cfg(unix)]
    if let Some((soft, hard)) = open_file_limit() {
        parts.push(format!("open-file limit (ulimit -n) {soft} (hard {hard})"));
    }
    if let Some((lo, hi)) = local_port_range() {
        parts.push(format!(
            "local ports {lo}-{hi} ({} per server address)",
            hi.saturating_sub(lo) + 1
        ));
    }
    parts.join("; ")
}

/// The local resource a raw OS error says the client ran out of, with the limit as it
/// stands and how to get more. `None` for every other error: those are the server's or the
/// network's.
fn client_resource_hint(errno: i32) -> Option<String> {
    #[cfg(unix)]
    {
        match errno {
            libc::EMFILE => {
                let now = match open_file_limit() {
                    Some((soft, hard)) => format!(" (ulimit -n is {soft}, hard limit {hard})"),
                    None => String::new(),
                };
                Some(format!(
                    "the client ran out of open files{now}: raise the open-file limit \
                     (`ulimit -n 65536`, or LimitNOFILE= for a service) or lower \
                     load.max_concurrency"
                ))
            }
            libc::ENFILE => Some(
                "the client machine ran out of open files (the system-wide limit, fs.file-max): \
                 raise it or lower load.max_concurrency"
                    .into(),
            ),
            libc::EADDRNOTAVAIL => {
                let now = match local_port_range() {
                    Some((lo, hi)) => format!(" (the range is {lo}-{hi})"),
                    None => String::new(),
                };
                Some(format!(
                    "the client ran out of local ports (or the local address is gone): widen \
                     the local port range (net.ipv4.ip_local_port_range{now}) or lower \
                     load.max_concurrency"
                ))
            }
            libc::ENOBUFS | libc::ENOMEM => Some(
                "the client machine ran out of socket buffers or memory: lower \
                 load.max_concurrency or free memory"
                    .into(),
            ),
            _ => None,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = errno;
        None
    }
}

/// When anything in `e`'s source chain is an OS error of the client's own resources: the
/// hint for it and the error text.
pub(crate) fn client_resource(e: &(dyn StdError + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(inner) = cur {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            if let Some(hint) = io.raw_os_error().and_then(client_resource_hint) {
                return Some(format!("{hint} ({io})"));
            }
        }
        cur = inner.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// An error wrapping another, as hyper-util and reqwest wrap the socket's `io::Error`.
    #[derive(Debug)]
    struct Wrap(&'static str, Box<dyn StdError + Send + Sync>);
    impl fmt::Display for Wrap {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }
    impl StdError for Wrap {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(self.1.as_ref())
        }
    }

    fn wrapped(errno: i32) -> Wrap {
        let io = std::io::Error::from_raw_os_error(errno);
        Wrap(
            "client error",
            Box::new(Wrap("tcp connect error", Box::new(io))),
        )
    }

    #[cfg(unix)]
    #[test]
    fn local_resource_errors_are_found_down_the_chain_with_their_fix() {
        let cases = [
            (libc::EMFILE, "ulimit -n is "),
            (libc::ENFILE, "fs.file-max"),
            (libc::EADDRNOTAVAIL, "net.ipv4.ip_local_port_range"),
            (libc::ENOBUFS, "socket buffers"),
            (libc::ENOMEM, "memory"),
        ];
        for (errno, fix) in cases {
            let why = client_resource(&wrapped(errno)).expect("a client resource error");
            assert!(why.contains(fix), "{errno}: {why}");
            assert!(why.contains("max_concurrency"), "{errno}: {why}");
            assert!(why.contains(&format!("os error {errno}")), "{why}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn server_and_network_errors_are_not_the_clients() {
        for errno in [
            libc::ECONNREFUSED,
            libc::ECONNRESET,
            libc::ETIMEDOUT,
            libc::EHOSTUNREACH,
        ] {
            assert_eq!(client_resource(&wrapped(errno)), None, "{errno}");
        }
        assert_eq!(client_resource(&Wrap("x", "no os error".into())), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_limits_as_they_stand_are_named() {
        let now = client_limits();
        assert!(now.contains("open-file limit (ulimit -n) "), "{now}");
        assert!(now.contains("local ports "), "{now}");
    }
}
