//! Failures of the client's own resources (open files, local ports, socket memory), told
//! apart from the server's by the OS error at the bottom of an error's source chain.

use std::error::Error as StdError;

/// The local resource a raw OS error says the client ran out of, and how to get more.
/// `None` for every other error: those are the server's or the network's.
fn client_resource_hint(errno: i32) -> Option<&'static str> {
    #[cfg(unix)]
    {
        match errno {
            libc::EMFILE => Some(
                "the client ran out of open files (this process's limit): raise the \
                 open-file limit (`ulimit -n`) or lower load.max_concurrency",
            ),
            libc::ENFILE => Some(
                "the client machine ran out of open files (the system-wide limit, fs.file-max): \
                 raise it or lower load.max_concurrency",
            ),
            libc::EADDRNOTAVAIL => Some(
                "the client ran out of local ports (or the local address is gone): widen \
                 the local port range (net.ipv4.ip_local_port_range) or lower \
                 load.max_concurrency",
            ),
            libc::ENOBUFS | libc::ENOMEM => Some(
                "the client machine ran out of socket buffers or memory: lower \
                 load.max_concurrency or free memory",
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
            (libc::EMFILE, "ulimit -n"),
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
}
