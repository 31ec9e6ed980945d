//! The whole `ladder validate` path on any file contents: load and check, then
//! `runner::prepare` (sim settings, headers, tokenizer, template on prompts, schedule).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("ladder-fuzz-v-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("scenario.yaml");
    // The corpus names the repository's tiny tokenizer relative to the scenario file.
    let tok = dir.join("tokenizers");
    if !tok.exists() {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/tokenizers");
        let _ = std::fs::create_dir_all(&tok);
        if let Ok(rd) = std::fs::read_dir(src) {
            for e in rd.flatten() {
                let _ = std::fs::copy(e.path(), tok.join(e.file_name()));
            }
        }
    }
    if std::fs::write(&path, data).is_ok() {
        let (loaded, diags) =
            ladder::scenario::check_file(&path, Some(&ladder::workload::tokenizer::check));
        if let Some(l) = loaded.filter(|_| diags.is_empty()) {
            let s = l.scenario.clone();
            if let Err(found) = ladder::runner::prepare(&l, s) {
                let _ = l.diagnose(&found);
            }
        }
    }
});
