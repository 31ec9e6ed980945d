//! Images in chat (`workload.images`) end to end against the built-in simulator: the request
//! lines record each request's images and bytes, the simulator counts each image's patches
//! (ceil(w/28) × ceil(h/28) tokens) and its TTFT grows with them over an `image_size` sweep,
//! the same scenario sends the same bytes, JPEG works, and validate refuses what cannot be.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{check_folder, ladder_cmd, no_panic, run_ladder, spawn, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(180);

fn scenario(dir: &Path, images: &str, extra: &str) -> std::path::PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: chat\n  \
         request_timeout: 10s\nmodel: ladder-sim\ntokenizer: {TOKENIZER}\nworkload:\n  \
         dataset: random\n  input_tokens: 16\n  output_tokens: 4\n  requests_per_rung: 8\n  \
         seed: 3\n  images: {images}\nload:\n  concurrency: [1]\n  cooldown: 0s\n{extra}"
    );
    let p = dir.join("im.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// The run folders under `out`, by name.
fn folders(out: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| {
            let d = e.unwrap().path();
            let mut inner: Vec<_> = std::fs::read_dir(&d)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert_eq!(inner.len(), 1, "{inner:?}");
            inner.pop().unwrap()
        })
        .collect();
    v.sort();
    v
}

#[test]
fn an_image_size_sweep_counts_patches_records_bytes_and_grows_ttft() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(
        tmp.path(),
        "{ per_request: 2, width: 64, height: 64 }",
        "sweep:\n  field: image_size\n  values: [56, 840]\n",
    );
    let mut runs = Vec::new();
    for k in 0..2 {
        let out = tmp.path().join(format!("out{k}"));
        let r = run_ladder(&sc, &out, LIMIT);
        no_panic(&r);
        assert!(r.status.success(), "{}", r.all());
        runs.push(folders(&out));
    }
    let mut ttft = Vec::new();
    let mut bytes = Vec::new();
    for (dir, side) in runs[0].iter().zip([56u32, 840]) {
        assert!(
            dir.to_string_lossy()
                .contains(&format!("image_size-{side}")),
            "{dir:?}"
        );
        let rd = check_folder(dir);
        let rung = &rd.rungs[0];
        let lines = rd.requests(rung).unwrap();
        assert_eq!(lines.len(), 8);
        // 16 words of text (the simulator's chat template adds none by default) and two
        // images of ceil(side/28)² patches each.
        let patches = side.div_ceil(28).pow(2);
        for l in &lines {
            assert!(l.ok, "{l:?}");
            assert_eq!(l.images, Some(2), "{l:?}");
            assert!(l.image_bytes.unwrap() > 2 * 30, "{l:?}");
            assert_eq!(l.input_tokens, 16, "{l:?}");
            assert_eq!(l.server_prompt_tokens, Some(16 + 2 * patches), "{l:?}");
            assert!(l.usage_rejected.is_none(), "{l:?}");
        }
        bytes.push(
            lines
                .iter()
                .map(|l| l.image_bytes.unwrap())
                .collect::<Vec<_>>(),
        );
        ttft.push(rung.summary.stats(ladder::metrics::Latency::Ttft).median);
    }
    // 2 × 900 image tokens against 2 × 4: the prefill, so the TTFT, grows.
    assert!(ttft[1] > ttft[0] * 1.5, "p50 TTFT {ttft:?}");
    assert!(bytes[1][0] > bytes[0][0], "{bytes:?}");
    // The same scenario run again sends the same images (same sizes request by request;
    // workload::images' unit tests check the bytes themselves).
    for (dir, want) in runs[1].iter().zip(&bytes) {
        let rd = check_folder(dir);
        let got: Vec<u64> = rd
            .requests(&rd.rungs[0])
            .unwrap()
            .iter()
            .map(|l| l.image_bytes.unwrap())
            .collect();
        assert_eq!(&got, want);
    }
}

#[test]
fn jpeg_images_are_sent_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(
        tmp.path(),
        "{ per_request: 1, width: 100, height: 50, format: jpeg }",
        "",
    );
    let out = tmp.path().join("out");
    let r = run_ladder(&sc, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let dir = &folders(&out)[0];
    let rd = check_folder(dir);
    for l in rd.requests(&rd.rungs[0]).unwrap() {
        assert_eq!(l.images, Some(1), "{l:?}");
        assert_eq!(l.server_prompt_tokens, Some(16 + 4 * 2), "{l:?}");
    }
}

#[test]
fn what_images_cannot_be_is_refused_by_validate() {
    let tmp = tempfile::tempdir().unwrap();
    let good = "{ per_request: 1, width: 64, height: 64 }";
    let cases = [
        (good, "api: completions", "images go in chat content parts"),
        (
            "{ per_request: 17, width: 64, height: 64 }",
            "",
            "per_request: must be at most 16",
        ),
        (
            "{ per_request: 1, width: 5000, height: 64 }",
            "",
            "width: must be at most 4096",
        ),
        (
            "{ per_request: 1, width: 64, height: 64, format: gif }",
            "",
            "gif",
        ),
        (good, "sweep-big", "side of 9000 pixels"),
        (
            "{ per_request: 16, width: 4096, height: 4096 }",
            "many",
            "synthesised before it",
        ),
    ];
    for (i, (images, twist, says)) in cases.iter().enumerate() {
        let extra = match *twist {
            "sweep-big" => "sweep:\n  field: image_size\n  values: [64, 9000]\n",
            _ => "",
        };
        let mut text = std::fs::read_to_string(scenario(tmp.path(), images, extra)).unwrap();
        if twist.starts_with("api:") {
            text = text.replace("api: chat", twist);
        }
        if *twist == "many" {
            text = text.replace("requests_per_rung: 8", "requests_per_rung: 1000");
        }
        let sc = tmp.path().join(format!("bad{i}.yaml"));
        std::fs::write(&sc, text).unwrap();
        let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
        no_panic(&r);
        assert!(!r.status.success(), "{says}: {}", r.all());
        assert!(r.all().contains(says), "{says}: {}", r.all());
    }
    // The sweep needs images to sweep.
    let text = std::fs::read_to_string(scenario(
        tmp.path(),
        good,
        "sweep:\n  field: image_size\n  values: [64]\n",
    ))
    .unwrap()
    .replace(&format!("  images: {good}\n"), "");
    let sc = tmp.path().join("noimg.yaml");
    std::fs::write(&sc, text).unwrap();
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert!(!r.status.success(), "{}", r.all());
    assert!(r.all().contains("`image_size` sweeps"), "{}", r.all());
    let sc = scenario(tmp.path(), good, "");
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert!(r.status.success(), "{}", r.all());
}
