//! JUnit XML of a comparison: one test case per rung × check; regressions are failures,
//! inconclusive checks are skipped (failures under `--strict`).

use std::fmt::Write;

use super::render;
use super::{Comparison, Verdict};
use crate::format::num;

/// Escape text for XML attributes and content.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// The JUnit XML document.
pub fn junit(c: &Comparison, strict: bool) -> String {
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
    let _ = writeln!(o, "    </properties>");
    for r in &c.rows {
        let class = escape(&format!(
            "{}.{}_{}",
            c.scenario,
            c.load.name(),
            render::rung_cell(r.rate)
        ));
        let name = escape(&format!("{} {}", r.check.label(), r.check.bound));
        let detail = format!(
            "baseline {} candidate {} ({} / {}), {} interval {} by {}{}",
            num(r.base),
            num(r.cand),
            render::signed(r.delta()),
            render::pct(r),
            super::stats::level_text(c.family.per_check),
            render::interval(r.decision.interval),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
        assert_eq!(escape("x\u{1}y"), "x\u{FFFD}y");
    }
}
