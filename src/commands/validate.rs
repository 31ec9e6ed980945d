//! `ladder validate`: what `run` would refuse before preflight, found without the network
//! (the same code: the scenario's checks, then `runner::prepare`).

use std::path::Path;

/// What `ladder validate` found in one file: the same lists its stderr lines are made of.
#[derive(Debug, Default)]
pub struct Checked {
    pub problems: Vec<crate::scenario::Diagnostic>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    pub ok: bool,
}

/// One file's problems, notes and warnings, as `run` would find them before preflight.
pub fn check(f: &Path) -> Checked {
    let (loaded, mut problems) =
        crate::scenario::check_file(f, Some(&|p| crate::tokens::check(p).map_err(Into::into)));
    // What `run` would refuse before preflight, `validate` refuses too (the same code).
    let loaded = loaded
        .filter(|_| problems.is_empty())
        .and_then(|l| match crate::runner::prepare(&l, l.scenario.clone()) {
            Ok(p) => {
                let mut l = l;
                if let (Some(r), Some(t)) = (&p.trace, &l.scenario.load.trace) {
                    l.notes.push(r.length_note(&t.speed));
                }
                Some(l)
            }
            Err(found) => {
                problems.extend(l.diagnose(&found));
                None
            }
        });
    match loaded {
        Some(l) => Checked {
            warnings: crate::compare::size::warnings(&l.scenario),
            notes: l.notes,
            problems,
            ok: true,
        },
        None => Checked {
            problems,
            ..Default::default()
        },
    }
}
