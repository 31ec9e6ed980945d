//! Template rendering with a budget: minijinja fuel bounds the work and a capped writer the
//! output, so no template (`{{ env.NAME }}` values at load, `prompt_template` per prompt) can
//! hang `validate` / `run` or exhaust memory. Limits: [`super::limits`].

use std::io::{self, Write};

use minijinja::{Environment, Error, ErrorKind, Template, UndefinedBehavior};
use serde::Serialize;

use super::limits::{MAX_TEMPLATE_OUTPUT_BYTES, PROMPT_TEMPLATE_FUEL, TEMPLATE_FUEL};

/// A strict-undefined environment with the per-render fuel of `prompt_template`.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(PROMPT_TEMPLATE_FUEL));
    env
}

/// Renders `{{ env.NAME }}` values: one fuel budget for all of a file's values together, so
/// many templated values cannot add up to a hang either.
pub struct Metered {
    env: Environment<'static>,
    left: u64,
}

impl Default for Metered {
    fn default() -> Self {
        Metered {
            env: environment(),
            left: TEMPLATE_FUEL,
        }
    }
}

impl Metered {
    /// Render one value from what is left of the budget.
    pub fn render_str<S: Serialize>(&mut self, src: &str, ctx: S) -> Result<String, Error> {
        self.env.set_fuel(Some(self.left.max(1)));
        let t = self.env.template_from_str(src)?;
        let mut out = Capped(Vec::new());
        let used = match t.render_captured_to(ctx, &mut out) {
            Ok(c) => c.state().fuel_levels().map_or(0, |(used, _)| used),
            Err(e) => {
                if e.kind() == ErrorKind::OutOfFuel {
                    self.left = 0;
                }
                return Err(capped_error(e));
            }
        };
        self.left = self.left.saturating_sub(used);
        Ok(String::from_utf8_lossy(&out.0).into_owned())
    }
}

fn capped_error(e: Error) -> Error {
    if e.kind() == ErrorKind::WriteFailure {
        Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "the template renders to more than {} MiB (the limit)",
                MAX_TEMPLATE_OUTPUT_BYTES / (1024 * 1024)
            ),
        )
    } else {
        e
    }
}

struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.0.len() + data.len() > MAX_TEMPLATE_OUTPUT_BYTES {
            return Err(io::Error::other("template output over the cap"));
        }
        self.0.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Render `t` with `ctx`, at most [`MAX_TEMPLATE_OUTPUT_BYTES`] of output.
pub fn render<S: Serialize>(t: &Template<'_, '_>, ctx: S) -> Result<String, Error> {
    let mut out = Capped(Vec::new());
    match t.render_captured_to(ctx, &mut out) {
        Ok(_) => Ok(String::from_utf8_lossy(&out.0).into_owned()),
        Err(e) => Err(capped_error(e)),
    }
}

/// Render a template source string under the per-render budget.
#[cfg(test)]
pub fn render_str<S: Serialize>(env: &Environment<'_>, src: &str, ctx: S) -> Result<String, Error> {
    render(&env.template_from_str(src)?, ctx)
}

/// The user's words for an exhausted budget, else `None`.
pub fn budget_message(e: &Error) -> Option<String> {
    (e.kind() == ErrorKind::OutOfFuel).then(|| {
        format!(
            "the template does too much work (more than {PROMPT_TEMPLATE_FUEL} steps per prompt, \
             {TEMPLATE_FUEL} for all `{{{{ env }}}}` values of a file: the limits); is a loop too long?"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_and_huge_outputs_are_cut_off() {
        let env = environment();
        let t0 = std::time::Instant::now();
        let e = render_str(
            &env,
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
            (),
        )
        .unwrap_err();
        assert!(
            budget_message(&e).is_some() || e.to_string().contains("MiB"),
            "{e}"
        );
        assert!(t0.elapsed() < std::time::Duration::from_secs(30));
        let e = render_str(
            &env,
            "{% for i in range(20) %}{{ 'x' * 99000000 }}{% endfor %}",
            (),
        )
        .unwrap_err();
        assert!(e.to_string().contains("MiB"), "{e}");
        assert_eq!(render_str(&env, "a{{ 1 + 1 }}", ()).unwrap(), "a2");
    }

    #[test]
    fn env_values_share_one_budget() {
        let mut m = Metered::default();
        let lp = "{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}";
        let t0 = std::time::Instant::now();
        let mut refused = 0;
        for _ in 0..50 {
            if m.render_str(lp, ()).is_err() {
                refused += 1;
            }
        }
        assert!(refused >= 49, "{refused}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(30));
        assert!(m.render_str("{{ 1 }}", ()).is_err(), "the budget is spent");
        assert_eq!(Metered::default().render_str("a{{ 2 }}", ()).unwrap(), "a2");
    }
}
