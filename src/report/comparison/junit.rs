//! JUnit XML of a comparison: one test case per rung × check; regressions are failures,
//! inconclusive checks are skipped (failures under `--strict`).

use std::fmt::Write;

use super::{pct, rung_cell, ComparisonExporter};
use crate::compare::explain::interval;
use crate::compare::{Comparison, Verdict};
use crate::escape::xml::escape;
use crate::format::{num, signed};

/// The JUnit XML document (`--junit`).
pub struct Junit;

impl ComparisonExporter for Junit {
    fn render(&self, c: &Comparison, strict: bool) -> String {
        junit(c, strict)
    }
}

fn junit(c: &Comparison, strict: bool) -> String {
    let failures = c.count(Verdict::Regression)
        + if strict {
            c.count(Verdict::Inconclusive)
        } else {
            0
        };
    let skipped = c.count(Verdict::PastSaturation)
        + if strict {
            0
        } else {
            c.count(Verdict::Inconclusive)
        };
    let suite = escape(&format!("ladder gate {}", c.scenario));
    let level = escape(&c.family.describe());
    let mut o = String::new();
    let _ = writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        o,
        r#"<testsuites name="ladder" tests="{n}" failures="{failures}" skipped="{skipped}">"#,
        n = c.rows.len()
    );
    let _ = writeln!(
        o,
        r#"  <testsuite name="{suite}" tests="{n}" failures="{failures}" errors="0" skipped="{skipped}">"#,
        n = c.rows.len()
    );
    let _ = writeln!(o, "    <properties>");
    let _ = writeln!(o, r#"      <property name="level" value="{level}"/>"#);
    let _ = writeln!(
        o,
        r#"      <property name="run_to_run_noise" value="{}"/>"#,
        escape(&c.run_noise.describe())
    );
    // The comparison's warnings (a differing cache share, a run's status, rungs only one side
    // has) explain its failures: a CI page that shows only the JUnit file keeps them.
    for (i, w) in c.warnings.iter().enumerate() {
        let _ = writeln!(
            o,
            r#"      <property name="warning_{}" value="{}"/>"#,
            i + 1,
            escape(w)
        );
    }
    let _ = writeln!(o, "    </properties>");
    for r in &c.rows {
        let class = escape(&format!(
            "{}.{}_{}",
            c.scenario,
            c.load.name(),
            rung_cell(r.rate)
        ));
        let name = escape(&format!("{} {}", r.check.label(), r.check.bound));
        let detail = format!(
            "baseline {} candidate {} ({} / {}), {} interval {} by {}{}",
            num(r.base),
            num(r.cand),
            signed(r.delta()),
            pct(r),
            crate::compare::stats::level_text(c.family.per_check),
            interval(r.decision.interval),
            r.method,
            if r.decision.note.is_empty() {
                String::new()
            } else {
                format!("; {}", r.decision.note)
            }
        );
        let _ = write!(o, r#"    <testcase classname="{class}" name="{name}""#);
        let v = r.decision.verdict;
        let fail = v == Verdict::Regression || (strict && v == Verdict::Inconclusive);
        if fail {
            let _ = writeln!(o, ">");
            let _ = writeln!(
                o,
                r#"      <failure message="{} {}" type="{v}">{}</failure>"#,
                escape(&r.check.to_string()),
                v,
                escape(&detail)
            );
            let _ = writeln!(o, "    </testcase>");
        } else if matches!(v, Verdict::Inconclusive | Verdict::PastSaturation) {
            let _ = writeln!(o, ">");
            let _ = writeln!(o, r#"      <skipped message="{v}: {}"/>"#, escape(&detail));
            let _ = writeln!(o, "    </testcase>");
        } else {
            let _ = writeln!(o, ">");
            let _ = writeln!(o, "      <system-out>{v}: {}</system-out>", escape(&detail));
            let _ = writeln!(o, "    </testcase>");
        }
    }
    let _ = writeln!(o, "  </testsuite>");
    let _ = writeln!(o, "</testsuites>");
    o
}
