//! `ladder run` keeps the process to one glibc malloc arena (runner::limits::one_malloc_arena):
//! threads started after it share the arenas that exist instead of making their own, the
//! fragmentation that made a soak's RSS creep. Counted with glibc's own `malloc_info`. The
//! test runs itself again as a child with `MALLOC_ARENA_MAX=8`, where the call does nothing,
//! to show the count does grow without it (so the check can fail).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::process::Command;
use std::sync::{Arc, Barrier};

/// Arenas glibc holds now (`<heap nr="…">` entries of malloc_info's XML).
fn arenas() -> usize {
    let mut buf: *mut libc::c_char = std::ptr::null_mut();
    let mut len: libc::size_t = 0;
    // SAFETY: open_memstream allocates the buffer it writes through `buf`/`len`; the stream
    // is closed (flushing them) before they are read, and the buffer freed after.
    unsafe {
        let f = libc::open_memstream(&mut buf, &mut len);
        assert!(!f.is_null(), "open_memstream failed");
        assert_eq!(libc::malloc_info(0, f), 0, "malloc_info failed");
        libc::fclose(f);
        let text = std::slice::from_raw_parts(buf as *const u8, len).to_vec();
        libc::free(buf.cast());
        String::from_utf8_lossy(&text).matches("<heap nr=").count()
    }
}

/// Arenas after `threads` threads allocate at the same time (each holds its memory until all
/// have allocated, so none can take over an arena another thread left).
fn arenas_after_threads(threads: usize) -> (usize, usize) {
    let before = arenas();
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let b = barrier.clone();
            std::thread::spawn(move || {
                let held: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4096]).collect();
                b.wait();
                let n = arenas();
                drop(held);
                n
            })
        })
        .collect();
    let during = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap();
    (before, during)
}

#[test]
fn threads_share_one_malloc_arena_after_a_run_starts() {
    if std::env::var_os("LADDER_ARENA_CHILD").is_some() {
        // The control: with MALLOC_ARENA_MAX=8 set, one_malloc_arena leaves glibc alone.
        ladder::runner::limits::one_malloc_arena();
        let (before, during) = arenas_after_threads(4);
        println!("ARENAS {before} {during}");
        return;
    }
    ladder::runner::limits::one_malloc_arena();
    let (before, during) = arenas_after_threads(4);
    assert_eq!(
        during, before,
        "4 threads started after one_malloc_arena made arenas of their own"
    );

    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "threads_share_one_malloc_arena_after_a_run_starts",
            "--nocapture",
        ])
        .env("LADDER_ARENA_CHILD", "1")
        .env("MALLOC_ARENA_MAX", "8")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ARENAS "))
        .unwrap_or_else(|| panic!("the child printed no count: {text}"));
    let n: Vec<usize> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    assert!(
        n[1] > n[0],
        "without the cap, 4 threads allocating at once should make arenas of their own: {line}"
    );
}
