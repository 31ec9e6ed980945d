//! JSON on stdout (`--json` of compare, gate, history, validate, merge): one document per
//! command, written by serde_json, with every character a terminal could act on (C0 and C1
//! controls, DEL, Unicode line and paragraph separators) written as a `\uXXXX` escape.
//! serde_json escapes C0 controls itself; the rest are valid JSON as they are, but a result
//! folder's text printed raw could still drive a terminal that shows the output. Such
//! characters only occur inside JSON strings, where `\uXXXX` means the same character.

/// `v` as one line of JSON (no trailing newline), terminal-safe.
pub fn document(v: &serde_json::Value) -> String {
    let text = serde_json::to_string(v).expect("a serde_json::Value always serialises");
    if !text.chars().any(unsafe_char) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::document;

    #[test]
    fn control_characters_are_escaped_and_the_text_survives() {
        let v = serde_json::json!({"a": "x\u{1b}[2J\u{9b}31m\u{7f}\u{2028}y\n", "n": f64::NAN});
        let s = document(&v);
        assert!(!s.chars().any(|c| c.is_control()), "{s}");
        assert!(s.contains("\\u009b") && s.contains("\\u2028"), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["a"], v["a"]);
        assert!(back["n"].is_null());
    }
}
