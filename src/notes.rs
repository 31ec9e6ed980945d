//! The one way the library speaks to the person running it: progress, notes and warnings
//! (the error stream) and the tables, paths and documents a command prints (the output
//! stream). Library code never prints; it is handed a [`Notes`] and writes lines to it. The
//! binary passes its terminal (which writes through `stdio`: escaped, surviving a closed
//! pipe); a library caller that passes nothing (`Notes::default()`) hears nothing.

use std::sync::Arc;

/// Where the lines go: the binary's terminal, a test's buffer.
pub trait Sink: Send + Sync {
    /// One line for the error stream (progress, notes, warnings), without its newline.
    fn err(&self, line: &str);
    /// Text for the output stream, exactly as given (a line brings its own newline).
    fn out(&self, text: &str);
}

/// A handle on a [`Sink`], cheap to clone into tasks; the default drops every line.
#[derive(Clone, Default)]
pub struct Notes(Option<Arc<dyn Sink>>);

impl Notes {
    /// Lines go to `sink`.
    pub fn to(sink: Arc<dyn Sink>) -> Notes {
        Notes(Some(sink))
    }

    /// One line on the error stream.
    pub fn err(&self, line: &str) {
        if let Some(s) = &self.0 {
            s.err(line);
        }
    }

    /// One line on the output stream.
    pub fn out_line(&self, line: &str) {
        if let Some(s) = &self.0 {
            s.out(&format!("{line}\n"));
        }
    }

    /// Text on the output stream, as given.
    pub fn out(&self, text: &str) {
        if let Some(s) = &self.0 {
            s.out(text);
        }
    }
}

impl std::fmt::Debug for Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Notes(sink)"
        } else {
            "Notes(silent)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Buffer(Mutex<(Vec<String>, String)>);
    impl Sink for Buffer {
        fn err(&self, line: &str) {
            self.0.lock().unwrap().0.push(line.to_string());
        }
        fn out(&self, text: &str) {
            self.0.lock().unwrap().1.push_str(text);
        }
    }

    #[test]
    fn lines_reach_the_sink_and_the_default_drops_them() {
        let b = Arc::new(Buffer::default());
        let n = Notes::to(b.clone());
        n.err("note: one");
        n.out_line("table");
        n.out("raw");
        Notes::default().err("lost");
        let got = b.0.lock().unwrap();
        assert_eq!(got.0, vec!["note: one".to_string()]);
        assert_eq!(got.1, "table\nraw");
    }
}
