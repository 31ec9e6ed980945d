mod support;
use support::*;

// Scenario families (issue 17): `extends: base.yaml` chains merged by the documented rules,
// cycles and bad bases refused with the file at fault, the chain recorded in run.json and in
// the configuration diff; `endpoint.extra_body` fields sent with every request.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn validate(file: &str) -> Ran {
    let r = spawn(ladder_cmd(&["validate", file])).finish(Duration::from_secs(60));
    no_panic(&r);
    r
}

/// A complete base: the simulator, a tiny two-rung ladder, two gate rules.
fn base(tokenizer: &str) -> String {
    format!(
        "version: 1\nname: fam-base\nendpoint:\n  base_url: sim\n  headers:\n    X-Team: perf\n\
         model: m\ntokenizer: {tokenizer}\nworkload:\n  input_tokens: 16\n  output_tokens: 4\n  \
         requests_per_rung: 3\n  seed: 0\nload:\n  arrival: constant\n  baseline_rate: 20\n  \
         rates: [40, 80]\n  warmup_requests: 0\n  cooldown: 0s\nsim:\n  speed: 20\n\
         gate:\n  - {{ metric: request_throughput, max_decrease: 15% }}\n  \
         - {{ metric: error_rate, max: 0.1 }}\n"
    )
}

#[test]
fn a_variant_merges_over_its_base_and_records_the_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "common/base.yaml", &base(TOKENIZER));
    // A middle layer: one more header, a longer output (mapping keys merge).
    write(
        d,
        "common/long.yaml",
        "extends: base.yaml\nendpoint:\n  headers:\n    X-Variant: long\nworkload:\n  output_tokens: 6\n",
    );
    let top = write(
        d,
        "variant.yaml",
        "version: 1\nextends: common/long.yaml\nname: fam\nload:\n  rates: [60]\ngate: null\n",
    );
    let v = validate(&top);
    assert!(v.status.success(), "{}", v.all());

    let out = d.join("out");
    let r = spawn(ladder_cmd(&["run", &top, "--out", out.to_str().unwrap()]))
        .finish(Duration::from_secs(120));
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let run = std::fs::read_dir(out.join("fam"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let info: Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    let sc = &info["scenario"];
    // The chain as written, nearest base first.
    assert_eq!(
        sc["extends"],
        serde_json::json!(["common/long.yaml", "base.yaml"]),
        "{sc}"
    );
    // Mappings merged across all three files; the list replaced; `null` removed the gate.
    assert_eq!(sc["endpoint"]["headers"]["X-Team"], "perf", "{sc}");
    assert_eq!(sc["endpoint"]["headers"]["X-Variant"], "long", "{sc}");
    assert_eq!(sc["workload"]["output_tokens"], 6, "{sc}");
    assert_eq!(sc["workload"]["input_tokens"], 16, "{sc}");
    assert_eq!(sc["load"]["rates"], serde_json::json!([60.0]), "{sc}");
    assert_eq!(sc["load"]["baseline_rate"], 20.0, "{sc}");
    assert!(sc.get("gate").is_none(), "{sc}");
    // The rungs that ran are the merged ladder's.
    assert!(run.join("result_rate_20.json").exists());
    assert!(run.join("result_rate_60.json").exists());
    assert!(!run.join("result_rate_40.json").exists());
    let rung: Value =
        serde_json::from_slice(&std::fs::read(run.join("result_rate_60.json")).unwrap()).unwrap();
    assert_eq!(rung["requested_output_tokens"], 6.0, "{rung}");
}

#[test]
fn the_configuration_diff_shows_a_changed_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "base.yaml", &base(TOKENIZER));
    write(
        d,
        "other.yaml",
        &base(TOKENIZER).replace("speed: 20", "speed: 21"),
    );
    let a = write(d, "a.yaml", "version: 1\nextends: base.yaml\nname: fam\n");
    let b = write(d, "b.yaml", "version: 1\nextends: other.yaml\nname: fam\n");
    let (oa, ob) = (d.join("oa"), d.join("ob"));
    for (sc, out) in [(&a, &oa), (&b, &ob)] {
        let r = spawn(ladder_cmd(&["run", sc, "--out", out.to_str().unwrap()]))
            .finish(Duration::from_secs(120));
        assert!(r.status.success(), "{}", r.all());
    }
    let folder = |o: &Path| {
        std::fs::read_dir(o.join("fam"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    };
    let (fa, fb) = (folder(&oa), folder(&ob));
    let r = spawn(ladder_cmd(&[
        "compare",
        fa.to_str().unwrap(),
        fb.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&r);
    let text = r.all();
    assert!(text.contains("extends"), "{text}");
    assert!(text.contains("other.yaml"), "{text}");
    assert!(text.contains("+      \"speed\": 21.0"), "{text}");
}

#[test]
fn cycles_bad_bases_and_errors_inside_a_base_are_named_with_their_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();

    // A cycle of two files, reported at the `extends` line that closes it, with the loop.
    write(d, "x.yaml", "version: 1\nextends: y.yaml\nname: x\n");
    let y = write(d, "y.yaml", "extends: x.yaml\n");
    let r = validate(&d.join("x.yaml").to_string_lossy());
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("y.yaml:1:"), "{}", r.stderr);
    assert!(r.stderr.contains("cycle"), "{}", r.stderr);
    assert!(r.stderr.contains("x.yaml → "), "{}", r.stderr);
    // Extending itself.
    let own = write(d, "own.yaml", "version: 1\nextends: own.yaml\nname: own\n");
    let r = validate(&own);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("cycle"), "{}", r.stderr);
    drop(y);

    // A missing base: at the `extends` value, naming the path tried.
    let m = write(
        d,
        "m.yaml",
        "version: 1\nname: m\nextends: nowhere/base.yaml\n",
    );
    let r = validate(&m);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("m.yaml:3:"), "{}", r.stderr);
    assert!(r.stderr.contains("nowhere/base.yaml"), "{}", r.stderr);
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);

    // Not a string.
    let l = write(
        d,
        "l.yaml",
        "version: 1\nname: l\nextends: [a.yaml, b.yaml]\n",
    );
    let r = validate(&l);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("one base scenario file"), "{}", r.stderr);

    // A wrong value inside the base is reported at the base file's own line, and a wrong
    // value in the variant at the variant's.
    let bad_base = base(TOKENIZER).replace("output_tokens: 4", "output_tokens: -4");
    write(d, "badbase.yaml", &bad_base);
    let v = write(
        d,
        "v.yaml",
        "version: 1\nextends: badbase.yaml\nname: v\nload:\n  arrival: sometimes\n",
    );
    let r = validate(&v);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let line = bad_base
        .lines()
        .position(|l| l.contains("output_tokens: -4"))
        .unwrap()
        + 1;
    assert!(
        r.stderr.contains(&format!("badbase.yaml:{line}:")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("v.yaml:5:"), "{}", r.stderr);

    // A YAML syntax error in a base: the base's file and line.
    write(d, "broken.yaml", "endpoint:\n  base_url: [sim\n");
    let bv = write(d, "bv.yaml", "version: 1\nname: bv\nextends: broken.yaml\n");
    let r = validate(&bv);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("broken.yaml:"), "{}", r.stderr);
    assert!(r.stderr.contains("invalid YAML"), "{}", r.stderr);

    // A chain longer than the stated limit.
    for i in 0..ladder::scenario::MAX_EXTENDS_CHAIN + 1 {
        write(
            d,
            &format!("c{i}.yaml"),
            &format!("extends: c{}.yaml\n", i + 1),
        );
    }
    let r = validate(&d.join("c0.yaml").to_string_lossy());
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr.contains(&format!(
            "longer than {}",
            ladder::scenario::MAX_EXTENDS_CHAIN
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn extra_body_fields_reach_every_request_and_reserved_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = fault_server(Fault::None, 0);
    let mut sc = Sc::new(srv.url());
    sc.n = 2;
    let p = sc.write(tmp.path());
    // Inject extra_body under `endpoint:` (the builder has no slot for it).
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "  api: completions\n",
        "  api: completions\n  extra_body:\n    top_k: 5\n    chat_template_kwargs: {enable_thinking: false}\n    lora_name: '{{ env.LADDER_TEST_ADAPTER }}'\n",
    );
    std::fs::write(&p, text).unwrap();
    let out = tmp.path().join("out");
    let r = spawn({
        let mut c = ladder_cmd(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        c.env("LADDER_TEST_ADAPTER", "adapter-lora-0007-abcdef");
        c
    })
    .finish(Duration::from_secs(60));
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let bodies = srv.bodies.lock().unwrap().clone();
    // The preflight probe and the two measured requests, all with the fields.
    assert!(bodies.len() >= 3, "{bodies:?}");
    for b in &bodies {
        let v: Value = serde_json::from_str(b).unwrap();
        assert_eq!(v["top_k"], 5, "{b}");
        assert_eq!(v["chat_template_kwargs"]["enable_thinking"], false, "{b}");
        assert_eq!(v["lora_name"], "adapter-lora-0007-abcdef", "{b}");
        assert_eq!(v["model"], "m", "{b}");
        assert_eq!(v["stream"], true, "{b}");
    }
    let run = run_dir(&out).unwrap();
    let info: Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["scenario"]["endpoint"]["extra_body"]["top_k"], 5);
    // A value from `{{ env.NAME }}` is sent but never written, like a header's.
    assert_eq!(
        info["scenario"]["endpoint"]["extra_body"]["lora_name"],
        "<redacted>"
    );
    assert!(!all_text_under(&run).contains("adapter-lora-0007-abcdef"));

    // Fields ladder sets itself are refused at validate, each with what to set instead.
    let bad = tmp.path().join("bad.yaml");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "    top_k: 5\n",
        "    top_k: 5\n    max_tokens: 9\n    stream: false\n    n: 2\n",
    );
    std::fs::write(&bad, text).unwrap();
    let r = validate(bad.to_str().unwrap());
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    for key in ["max_tokens", "stream", "n"] {
        assert!(
            r.stderr.contains(&format!("endpoint.extra_body.{key}")),
            "{key}: {}",
            r.stderr
        );
    }
    assert!(r.stderr.contains("workload.output_tokens"), "{}", r.stderr);
}
