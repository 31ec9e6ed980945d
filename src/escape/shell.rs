//! The Slurm batch script (`ladder slurm`): every value from outside (flags, paths, the
//! scenario's name) is either checked against a safe character set (in `#SBATCH` lines,
//! which Slurm reads before any shell) or single-quoted for a POSIX shell.

/// `s` single-quoted for a POSIX shell (left bare when every character is safe).
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Characters allowed in a value written on an `#SBATCH` line (partition names, times,
/// job names): letters, digits and `-_.:,+=@/`. Slurm parses these lines itself, before
/// any shell, so they cannot be quoted: anything else is refused.
pub fn directive_value(flag: &str, value: &str) -> Result<(), DirectiveError> {
    if value.is_empty() {
        return Err(DirectiveError::Empty { flag: flag.into() });
    }
    match value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.:,+=@/".contains(*c)))
    {
        None => Ok(()),
        Some(c) => Err(DirectiveError::Character {
            flag: flag.into(),
            value: value.into(),
            character: c,
        }),
    }
}

/// A value refused on an `#SBATCH` line; `flag` names where it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectiveError {
    /// An empty value.
    #[error("{flag} is empty; give a value or leave the flag out")]
    Empty { flag: String },
    /// A character outside the safe set (the value is shown shell-quoted).
    #[error(
        "{flag} {}: the character {} cannot go on an #SBATCH line (letters, digits and \
         -_.:,+=@/ only); give the value Slurm expects, e.g. --partition gpu, --time 01:00:00",
        quote(value),
        character.escape_default()
    )]
    Character {
        flag: String,
        value: String,
        character: char,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_every_shell_metacharacter() {
        assert_eq!(quote("a/b.yaml"), "a/b.yaml");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a\nb"), "'a\nb'");
    }

    #[test]
    fn directive_values_outside_the_safe_set_are_refused() {
        assert!(directive_value("--partition", "gpu-a100").is_ok());
        assert!(directive_value("--time", "01:00:00").is_ok());
        assert!(directive_value("--time", "2-00:00:00").is_ok());
        for bad in [
            "gpu\n#SBATCH --x",
            "a b",
            "$(id)",
            "a;b",
            "x`y`",
            "",
            "a\rb",
        ] {
            let e = directive_value("--partition", bad).unwrap_err();
            assert!(e.to_string().contains("--partition"), "{e}");
        }
    }

    #[test]
    fn a_refused_directive_says_which_case_and_which_character() {
        assert_eq!(
            directive_value("--time", ""),
            Err(DirectiveError::Empty {
                flag: "--time".into()
            })
        );
        let e = directive_value("--partition", "a;b").unwrap_err();
        assert_eq!(
            e,
            DirectiveError::Character {
                flag: "--partition".into(),
                value: "a;b".into(),
                character: ';'
            }
        );
        assert_eq!(
            e.to_string(),
            "--partition 'a;b': the character ; cannot go on an #SBATCH line (letters, digits \
             and -_.:,+=@/ only); give the value Slurm expects, e.g. --partition gpu, --time \
             01:00:00"
        );
        assert!(directive_value("--partition", "a\nb")
            .unwrap_err()
            .to_string()
            .contains("the character \\n cannot"));
    }
}
