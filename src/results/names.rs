//! The file names of a result folder's rungs, from their rates ([`rate_label`]): written by
//! the writer, read by the loader, the checks and the vLLM import.

pub use crate::scenario::rate_label;

/// `result_rate_<rate>.json`.
pub fn result_file_name(rate: f64) -> String {
    format!("result_rate_{}.json", rate_label(rate))
}

/// `server_metrics_rate_<rate>.jsonl`: the scrapes of the server's metrics during the rung.
pub fn server_metrics_file_name(rate: f64) -> String {
    format!("server_metrics_rate_{}.jsonl", rate_label(rate))
}

/// `requests_rate_<rate>.jsonl`.
pub fn requests_file_name(rate: f64) -> String {
    format!("requests_rate_{}.jsonl", rate_label(rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_labels_have_no_trailing_zeros() {
        assert_eq!(rate_label(5.0), "5");
        assert_eq!(rate_label(0.5), "0.5");
        assert_eq!(rate_label(12.25), "12.25");
        assert_eq!(result_file_name(10.0), "result_rate_10.json");
        assert_eq!(requests_file_name(2.5), "requests_rate_2.5.jsonl");
    }
}
