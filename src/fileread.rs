//! One bounded reader for every file ladder reads (scenario files and their `extends:` bases,
//! datasets, traces, tokenizer files, result and golden folders, vLLM result files): a regular
//! file only, never more than its limit read. Sizes are not taken from metadata alone:
//! `/dev/zero` reports 0 bytes and a FIFO none, so the reader refuses what is not a regular
//! file before opening it (opening a FIFO blocks), opens without blocking, checks the opened
//! file again, and reads at most `limit + 1` bytes.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// The path does not exist.
    NotFound(PathBuf),
    /// A directory: the caller may look inside it.
    Directory(PathBuf),
    /// A FIFO, device, socket: never read (it could block or never end).
    NotRegular {
        /// The path as given.
        path: PathBuf,
        /// What it is ("a FIFO", "a character device", ...).
        kind: &'static str,
    },
    /// Larger than the limit.
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// The limit, bytes.
        limit: u64,
        /// The size metadata gave (`None`: found while reading, past the limit).
        size: Option<u64>,
    },
    /// Any other I/O error.
    Io {
        /// The path as given.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl ReadError {
    /// The message without the path (for callers whose own message names the file).
    pub fn reason(&self) -> String {
        match self {
            ReadError::NotFound(_) => "file does not exist".into(),
            ReadError::Directory(_) => "is a directory, not a file".into(),
            ReadError::NotRegular { kind, .. } => {
                format!("is {kind}, not a regular file; ladder reads regular files only")
            }
            ReadError::TooLarge { limit, size, .. } => match size {
                Some(n) => format!(
                    "is {}, more than the limit of {} for this file",
                    show_size(*n),
                    show_bytes(*limit)
                ),
                None => format!(
                    "is larger than the limit of {} for this file",
                    show_bytes(*limit)
                ),
            },
            ReadError::Io { source, .. } => format!("cannot read the file: {source}"),
        }
    }

    /// The path it is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotFound(p) | ReadError::Directory(p) => p,
            ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// As an `std::io::Error` (for callers whose error type holds one), the message kept.
    pub fn into_io(self) -> std::io::Error {
        let kind = match &self {
            ReadError::NotFound(_) => std::io::ErrorKind::NotFound,
            ReadError::Io { source, .. } => source.kind(),
            _ => std::io::ErrorKind::InvalidData,
        };
        std::io::Error::new(kind, self.reason())
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for ReadError {}

/// `n` bytes as a user reads them (`1 MiB`, `512 KiB`, `100 bytes`).
pub fn show_bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// A file's size, one decimal (`47.7 MiB`).
pub fn show_size(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
    } else if n >= 1 << 10 {
        format!("{:.1} KiB", n as f64 / f64::from(1 << 10))
    } else {
        format!("{n} bytes")
    }
}

fn kind_of(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Whether `path` is a regular file (or a symlink to one) that [`read_bounded`] would open,
/// without opening it: for checks that only look (`validate`'s dataset path).
pub fn check_regular(path: &Path) -> Result<(), ReadError> {
    let meta = std::fs::metadata(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ReadError::NotFound(path.to_path_buf())
        } else {
            ReadError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    let ft = meta.file_type();
    if ft.is_dir() {
        Err(ReadError::Directory(path.to_path_buf()))
    } else if !ft.is_file() {
        Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&ft),
        })
    } else {
        Ok(())
    }
}

/// The bytes of `path`, a regular file (or a symlink to one) of at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let io = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ReadError::NotFound(path.to_path_buf())
        } else {
            ReadError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    };
    let check = |meta: &std::fs::Metadata| -> Result<(), ReadError> {
        let ft = meta.file_type();
        if ft.is_dir() {
            return Err(ReadError::Directory(path.to_path_buf()));
        }
        if !ft.is_file() {
            return Err(ReadError::NotRegular {
                path: path.to_path_buf(),
                kind: kind_of(&ft),
            });
        }
        if meta.len() > limit {
            return Err(ReadError::TooLarge {
                path: path.to_path_buf(),
                limit,
                size: Some(meta.len()),
            });
        }
        Ok(())
    };
    // Before opening: opening a FIFO for reading blocks until a writer comes.
    check(&std::fs::metadata(path).map_err(io)?)?;
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking, so a file swapped for a FIFO after the check cannot block the open.
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(io)?
    };
    // The file actually opened.
    check(&file.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            limit,
            size: None,
        });
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text_bounded(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bounded(path, limit)?).map_err(|e| ReadError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {}", e.utf8_error()),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_directories_and_oversized_files_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        // /dev/zero reports 0 bytes and never ends: refused as a device, nothing read.
        let t0 = std::time::Instant::now();
        let e = read_bounded(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular { .. }), "{e}");
        assert!(e.to_string().contains("character device"), "{e}");
        // A FIFO without a writer: refused at once, never opened.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_bounded(&fifo, 1024).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        assert!(matches!(
            read_bounded(dir.path(), 10).unwrap_err(),
            ReadError::Directory(_)
        ));
        assert!(matches!(
            read_bounded(&dir.path().join("none"), 10).unwrap_err(),
            ReadError::NotFound(_)
        ));
        let f = dir.path().join("f");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read_bounded(&f, 10).unwrap(), b"0123456789");
        let e = read_bounded(&f, 9).unwrap_err();
        assert!(
            e.to_string()
                .contains("is 10 bytes, more than the limit of 9 bytes"),
            "{e}"
        );
        // A symlink to a regular file is followed; one to a device is refused.
        let l = dir.path().join("l");
        std::os::unix::fs::symlink("/dev/zero", &l).unwrap();
        assert!(matches!(
            read_bounded(&l, 10).unwrap_err(),
            ReadError::NotRegular { .. }
        ));
        assert_eq!(show_bytes(1 << 20), "1 MiB");
    }
}
