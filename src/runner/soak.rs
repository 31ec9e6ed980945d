//! A rung run for a duration (`load.duration`, a soak): its records are folded into the
//! summary and appended to the requests file as they arrive, never kept, and every interval
//! the file is flushed and the summary so far is written (marked partial), so memory stays
//! flat over an hour and a crash loses at most one interval (docs/soak.md).
//!
//! Prompts: the rung synthesises `workload.prompt_pool` prompts (warmup included) the way
//! a counted rung synthesises its `requests_per_rung`, with the same seed, and cycles them
//! in order: request `i` sends prompt `i mod pool`.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::rung::RecordSink;
use crate::metrics::{RungContext, RungFold, RungSummary};
use crate::record::RequestRecord;
use crate::results::{RequestStream, RunWriter, WriteError};
use crate::scenario::{DurationStr, LoadKind};

/// Where a timed rung's records go.
pub(super) struct SoakSink<'a> {
    fold: RungFold,
    stream: RequestStream,
    writer: &'a mut RunWriter,
    /// Context of the partial summaries (the final one gets the rung's own).
    ctx: RungContext,
    settle: Settle,
    prefix: PoolPrefixes,
    duration: Duration,
    kind: LoadKind,
    /// The first write that failed; the rung goes on and the error is reported at its end.
    error: Option<WriteError>,
}

impl<'a> SoakSink<'a> {
    /// Open the rung's requests file in `writer`'s folder. `groups` is the prefix group of
    /// each prompt of the pool (empty without shared prefixes).
    pub fn open(
        writer: &'a mut RunWriter,
        ctx: RungContext,
        kind: LoadKind,
        duration: Duration,
        groups: Vec<u32>,
    ) -> Result<SoakSink<'a>, WriteError> {
        let stream = writer.stream_rung(ctx.rate)?;
        Ok(SoakSink {
            fold: RungFold::new(ctx.slo.clone()),
            stream,
            writer,
            ctx,
            settle: Settle::default(),
            prefix: PoolPrefixes::new(groups),
            duration,
            kind,
            error: None,
        })
    }

    /// The summary of every record folded, with `ctx`; the requests file still open, to be
    /// closed by [`RunWriter::finish_streamed_rung`]; and the first write error, if any.
    pub fn finish(
        self,
        ctx: &RungContext,
    ) -> (RungSummary, RequestStream, u64, Option<WriteError>) {
        (
            self.fold.summary(ctx),
            self.stream,
            self.fold.late(),
            self.error,
        )
    }

    fn keep(&mut self, r: Result<(), WriteError>) {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(e);
        }
    }
}

impl RecordSink for SoakSink<'_> {
    fn record(&mut self, mut rec: RequestRecord) {
        self.prefix.tag(&mut rec);
        // Folded before settling: this record may be the one that completes the prefix.
        self.fold.add(&rec);
        if let Some(t) = self.settle.arrived(rec.index, rec.scheduled) {
            self.fold.settle(t.saturating_sub(SETTLE_MARGIN));
        }
        let r = self.stream.append(&rec);
        self.keep(r);
    }

    fn tick(&mut self, elapsed: Duration) {
        let r = self.stream.flush();
        self.keep(r);
        let summary = self.fold.summary(&self.ctx);
        let shown = |d: Duration| DurationStr(Duration::from_secs(d.as_secs()));
        let progress = format!(
            "{} in progress: {} of {}, {} requests finished; its result file is partial until \
             the rung ends",
            self.kind.rung(self.ctx.rate),
            shown(elapsed.min(self.duration)),
            shown(self.duration),
            self.fold.records(),
        );
        let r = self.writer.write_partial_rung(&summary, progress);
        self.keep(r);
    }
}

/// Settling is held back by this much more than the send order requires, so a send a
/// timer let out a little before its time is still folded in order.
const SETTLE_MARGIN: Duration = Duration::from_secs(1);

/// The earliest send time a record still to come can have. Requests are numbered in the
/// order they are taken, and request `j` is never sent before the scheduled time of an
/// earlier request `i < j` (open loop: the schedule is sorted and nothing is sent before
/// its time; closed loop: a user takes `j` after `i` was taken, at or after `i` was
/// ready). So once every request below `L` has arrived, none still to come was sent before
/// the latest scheduled time among them.
#[derive(Debug, Default)]
struct Settle {
    /// The lowest request index not yet arrived.
    lowest: u64,
    /// Scheduled times of arrived requests from `lowest` on (`None`: not arrived).
    seen: VecDeque<Option<Duration>>,
    floor: Duration,
}

impl Settle {
    /// Note a record's arrival; the new settled time when it moved.
    fn arrived(&mut self, index: u32, scheduled: Duration) -> Option<Duration> {
        let i = u64::from(index);
        if i < self.lowest {
            return None;
        }
        let k = (i - self.lowest) as usize;
        if self.seen.len() <= k {
            self.seen.resize(k + 1, None);
        }
        self.seen[k] = Some(scheduled);
        let mut moved = false;
        while let Some(Some(t)) = self.seen.front().copied() {
            self.floor = self.floor.max(t);
            self.seen.pop_front();
            self.lowest += 1;
            moved = true;
        }
        moved.then_some(self.floor)
    }
}

/// Prefix groups of a cycled pool: request `i` sends prompt `i mod pool`, so the first
/// request of a group is the group's first prompt in the pool, in the first cycle.
#[derive(Debug, Default)]
struct PoolPrefixes {
    groups: Vec<u32>,
    first: HashMap<u32, u32>,
}

impl PoolPrefixes {
    fn new(groups: Vec<u32>) -> PoolPrefixes {
        let mut first = HashMap::new();
        for (i, &g) in groups.iter().enumerate() {
            first.entry(g).or_insert(i as u32);
        }
        PoolPrefixes { groups, first }
    }

    fn tag(&self, r: &mut RequestRecord) {
        if self.groups.is_empty() {
            return;
        }
        let g = self.groups[r.index as usize % self.groups.len()];
        r.prefix_group = Some(g);
        r.prefix_first = self.first.get(&g) == Some(&r.index);
    }
}

/// `1:05` or `1:02:03`: a rung's elapsed or remaining time in the live line.
pub(super) fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s / 3600 {
        0 => format!("{}:{:02}", s / 60, s % 60),
        h => format!("{h}:{:02}:{:02}", (s / 60) % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settling_waits_for_every_earlier_request() {
        let mut s = Settle::default();
        let ms = Duration::from_millis;
        assert_eq!(s.arrived(1, ms(10)), None);
        assert_eq!(s.arrived(2, ms(20)), None);
        // Request 0 arrives: 0..=2 are all in, the latest scheduled among them is 20 ms.
        assert_eq!(s.arrived(0, ms(0)), Some(ms(20)));
        assert_eq!(s.arrived(4, ms(40)), None);
        assert_eq!(s.arrived(3, ms(30)), Some(ms(40)));
        assert!(s.seen.is_empty());
    }

    #[test]
    fn a_cycled_pool_marks_each_group_first_once() {
        let p = PoolPrefixes::new(vec![0, 1, 0, 1]);
        let tagged: Vec<(Option<u32>, bool)> = (0..8)
            .map(|i| {
                let mut r = RequestRecord {
                    index: i,
                    ..Default::default()
                };
                p.tag(&mut r);
                (r.prefix_group, r.prefix_first)
            })
            .collect();
        let firsts: Vec<usize> = (0..8).filter(|&i| tagged[i].1).collect();
        assert_eq!(firsts, vec![0, 1]);
        assert_eq!(tagged[6].0, Some(0));
    }

    #[test]
    fn clocks_read_as_minutes_or_hours() {
        assert_eq!(clock(Duration::from_secs(65)), "1:05");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
    }
}
