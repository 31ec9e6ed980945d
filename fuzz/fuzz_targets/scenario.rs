//! The scenario loader on any file contents.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("ladder-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("scenario.yaml");
    if std::fs::write(&path, data).is_ok() {
        let _ = ladder::scenario::load(&path);
        let _ = ladder::scenario::check_file(&path, None);
    }
});
