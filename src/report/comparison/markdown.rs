//! The Markdown view of a comparison, fit for `$GITHUB_STEP_SUMMARY`.

use std::fmt::Write;

use super::{cells, checks_listing, headers, rung_cell, summary_line, ComparisonExporter};
use crate::compare::{Comparison, Verdict};
use crate::escape::markdown::{cell, code, fenced, inline};
use crate::format::num;

/// Ladder's words with outside text in them, on one line, never markup.
fn md_escape(s: &str) -> String {
    cell(&inline(s))
}

/// The Markdown summary (`--summary`), fit for `$GITHUB_STEP_SUMMARY`.
pub struct Markdown;

impl ComparisonExporter for Markdown {
    fn render(&self, c: &Comparison, strict: bool) -> String {
        markdown(c, strict)
    }
}

fn markdown(c: &Comparison, strict: bool) -> String {
    let mut o = String::new();
    // A gate that judged nothing exits 2: no green mark for it.
    let icon = if c.failed(strict) {
        "❌"
    } else if c.no_verdict() {
        "⚠️"
    } else {
        "✅"
    };
    let _ = writeln!(o, "## ladder comparison: {} {icon}", code(&c.scenario));
    let _ = writeln!(o);
    let _ = writeln!(o, "**{}**", md_escape(&summary_line(c, strict)));
    let _ = writeln!(o);
    let [b, cand] = &c.what_ran;
    o.push_str(&crate::report::facts::markdown(
        &[b, cand],
        &["baseline", "candidate"],
    ));
    let _ = writeln!(o);
    let _ = writeln!(o, "- baseline: {}", code(&c.base_label));
    let _ = writeln!(o, "- candidate: {}", code(&c.cand_label));
    let _ = writeln!(o, "- {}", md_escape(&c.knee.describe()));
    let _ = writeln!(o, "- checks: {}", md_escape(&c.checks_source));
    let _ = writeln!(o, "  - {}", md_escape(checks_listing(c).trim_start()));
    let _ = writeln!(o, "- level: {}", md_escape(&c.family.describe()));
    let _ = writeln!(o, "- {}", md_escape(&c.run_noise.describe()));
    for ch in &c.config_changes {
        let _ = writeln!(
            o,
            "- ⚠️ {} (compared because of `--allow-config-change`)",
            md_escape(ch)
        );
    }
    for w in &c.warnings {
        let _ = writeln!(o, "- ⚠️ {}", md_escape(w));
    }
    let _ = writeln!(o);
    match &c.config_diff {
        None => {
            let _ = writeln!(o, "No configuration change.");
        }
        Some(d) => {
            let _ = writeln!(o, "<details><summary>Configuration diff</summary>");
            let _ = writeln!(o);
            o.push_str(&fenced("diff", d));
            let _ = writeln!(o);
            let _ = writeln!(o, "</details>");
        }
    }
    let _ = writeln!(o);
    let headers = headers(c.load);
    let _ = writeln!(o, "| {} |", headers.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(headers.len()));
    for r in &c.rows {
        let mut cs = cells(r).map(|s| md_escape(&s));
        if r.decision.verdict == Verdict::Regression {
            cs[8] = format!("**{}**", cs[8]);
        }
        let _ = writeln!(o, "| {} |", cs.join(" | "));
    }
    let notes: Vec<_> = c
        .rows
        .iter()
        .filter(|r| !r.decision.note.is_empty())
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "Notes:");
        let _ = writeln!(o);
        for r in notes {
            let _ = writeln!(
                o,
                "- {} {} {}: {}",
                c.load.name(),
                rung_cell(r.rate),
                code(&r.check.to_string()),
                md_escape(&r.decision.note)
            );
        }
    }
    if !c.model_rows.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Per model (shown, not judged; a gate rule with `model:` judges one):"
        );
        let _ = writeln!(o);
        let _ = writeln!(o, "| rung | model | metric | baseline | candidate |");
        let _ = writeln!(o, "| ---: | --- | --- | ---: | ---: |");
        for r in &c.model_rows {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                rung_cell(r.rate),
                cell(&code(&r.model)),
                code(r.metric),
                num(r.base),
                num(r.cand)
            );
        }
    }
    if !c.server_notes.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "Server side (scraped `/metrics`):");
        let _ = writeln!(o);
        for (rate, n) in &c.server_notes {
            let _ = writeln!(o, "- {} {}: {}", c.load.name(), num(*rate), md_escape(n));
        }
    }
    o
}
