//! One side's samples, grouped by the unit that resampling draws: a request (its ITL gaps
//! stay together), a session (its turns stay together), or a request's `[sent, end,
//! weight]` triple for a throughput. The values lie in one flat buffer: a million requests
//! are one allocation, not a million small vectors (each 56 bytes for an 8-byte sample,
//! which at a million requests a rung was a fifth of `ladder compare`'s memory).

use crate::stats::SplitMix64;

#[cfg(test)]
thread_local! {
    /// Groups this thread's resamples have drawn: tests show which paths stay O(draws ·
    /// small side) rather than O(draws · big side).
    pub(crate) static RESAMPLED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Samples in groups, flat. Group `i` is [`Groups::get`]`(i)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Groups {
    values: Vec<f64>,
    shape: Shape,
    count: usize,
    /// Requests (or sessions) inside the groups: `count`, unless groups are blocks of
    /// several ([`Groups::blocks`]).
    units: usize,
}

/// Where each group lies in `values`.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// Every group holds this many values: group i is `values[i·w .. (i + 1)·w]`.
    Uniform(usize),
    /// Group i is `values[starts[i] .. starts[i + 1]]` (`starts` has one entry more than
    /// there are groups).
    Starts(Vec<usize>),
}

impl Default for Shape {
    fn default() -> Self {
        Shape::Uniform(1)
    }
}

impl Groups {
    /// Empty, with room for `values` samples.
    pub fn with_capacity(values: usize) -> Groups {
        Groups {
            values: Vec::with_capacity(values),
            ..Groups::default()
        }
    }

    /// One group per value.
    pub fn singles(values: Vec<f64>) -> Groups {
        Groups {
            count: values.len(),
            units: values.len(),
            values,
            shape: Shape::Uniform(1),
        }
    }

    /// Add a group at the end.
    pub fn push(&mut self, group: &[f64]) {
        match &mut self.shape {
            Shape::Uniform(w) if self.count == 0 => *w = group.len(),
            Shape::Uniform(w) if *w == group.len() => {}
            Shape::Uniform(w) => {
                let w = *w;
                self.shape = Shape::Starts((0..=self.count).map(|i| i * w).collect());
            }
            Shape::Starts(_) => {}
        }
        self.values.extend_from_slice(group);
        self.count += 1;
        self.units += 1;
        if let Shape::Starts(s) = &mut self.shape {
            s.push(self.values.len());
        }
    }

    /// The number of groups.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The requests (or sessions) in the groups: [`Groups::len`], or more when the groups
    /// are blocks of consecutive requests. The size rules (large sample, one big side) count
    /// these.
    pub fn units(&self) -> usize {
        self.units
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The number of samples in all groups.
    pub fn samples(&self) -> usize {
        self.values.len()
    }

    /// Every sample, group after group.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Group `i`'s samples.
    pub fn get(&self, i: usize) -> &[f64] {
        match &self.shape {
            Shape::Uniform(w) => &self.values[i * w..(i + 1) * w],
            Shape::Starts(s) => &self.values[s[i]..s[i + 1]],
        }
    }

    /// The groups in order.
    pub fn iter(&self) -> impl Iterator<Item = &[f64]> + '_ {
        (0..self.count).map(|i| self.get(i))
    }

    /// Consecutive groups merged `b` at a time (the last block takes what is left): the
    /// blocks of a block bootstrap over a time-ordered series. `b` ≤ 1 gives a copy.
    pub fn blocks(&self, b: usize) -> Groups {
        if b <= 1 {
            return self.clone();
        }
        let mut out = Groups::with_capacity(self.values.len());
        let mut block: Vec<f64> = Vec::new();
        for (i, g) in self.iter().enumerate() {
            block.extend_from_slice(g);
            if (i + 1) % b == 0 || i + 1 == self.count {
                out.push(&block);
                block.clear();
            }
        }
        out.units = self.units;
        out
    }

    /// Several sides' groups one after the other.
    pub fn concat(parts: &[Groups]) -> Groups {
        let mut out = Groups::with_capacity(parts.iter().map(Groups::samples).sum());
        for p in parts {
            for g in p.iter() {
                out.push(g);
            }
        }
        out.units = parts.iter().map(Groups::units).sum();
        out
    }

    /// A resample of the groups with replacement (as many groups as there are), their
    /// samples flattened into `buf`.
    pub(crate) fn resample(&self, rng: &mut SplitMix64, buf: &mut Vec<f64>) {
        buf.clear();
        let n = self.count;
        match &self.shape {
            Shape::Uniform(1) => buf.extend((0..n).map(|_| self.values[rng.below(n)])),
            _ => {
                for _ in 0..n {
                    buf.extend_from_slice(self.get(rng.below(n)));
                }
            }
        }
        #[cfg(test)]
        RESAMPLED.with(|c| c.set(c.get() + n));
    }
}

impl From<Vec<Vec<f64>>> for Groups {
    fn from(groups: Vec<Vec<f64>>) -> Groups {
        Groups::from(groups.as_slice())
    }
}

impl From<&[Vec<f64>]> for Groups {
    fn from(groups: &[Vec<f64>]) -> Groups {
        let mut out = Groups::with_capacity(groups.iter().map(Vec::len).sum());
        for g in groups {
            out.push(g);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_their_bounds_whatever_their_sizes() {
        let nested = vec![
            vec![1.0, 2.0],
            vec![3.0, 4.0],
            vec![5.0],
            vec![],
            vec![6.0, 7.0],
        ];
        let g = Groups::from(nested.clone());
        assert_eq!(g.len(), 5);
        assert_eq!(g.samples(), 7);
        let back: Vec<Vec<f64>> = g.iter().map(<[f64]>::to_vec).collect();
        assert_eq!(back, nested);
        // Equal sizes stay uniform, and read back the same.
        let triples = Groups::from(vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]);
        assert_eq!(triples.shape, Shape::Uniform(3));
        assert_eq!(triples.get(1), &[4.0, 5.0, 6.0]);
        let singles = Groups::singles(vec![9.0, 8.0]);
        assert_eq!(singles, Groups::from(vec![vec![9.0], vec![8.0]]));
        assert!(Groups::default().is_empty());
    }

    #[test]
    fn a_resample_draws_whole_groups() {
        let g = Groups::from(vec![vec![1.0, 1.0], vec![2.0], vec![3.0, 3.0, 3.0]]);
        let mut rng = SplitMix64(7);
        let mut buf = Vec::new();
        let mut seen = [false; 3];
        for _ in 0..200 {
            g.resample(&mut rng, &mut buf);
            // Three groups drawn: runs of equal values of each group's own length.
            let mut i = 0;
            let mut drawn = 0;
            while i < buf.len() {
                // The group of value v: [1, 1], [2] or [3, 3, 3].
                let v = buf[i];
                let want = match v as usize {
                    1 => 2,
                    2 => 1,
                    _ => 3,
                };
                assert!(buf[i..i + want].iter().all(|x| *x == v), "{buf:?}");
                seen[v as usize - 1] = true;
                i += want;
                drawn += 1;
            }
            assert_eq!(drawn, 3);
        }
        assert_eq!(seen, [true; 3]);
        // Singles resample as values, the same draws as a uniform index each.
        let s = Groups::singles(vec![5.0, 6.0, 7.0]);
        let (mut a, mut b) = (SplitMix64(3), SplitMix64(3));
        s.resample(&mut a, &mut buf);
        let by_hand: Vec<f64> = (0..3).map(|_| [5.0, 6.0, 7.0][b.below(3)]).collect();
        assert_eq!(buf, by_hand);
    }
    #[test]
    fn blocks_merge_consecutive_groups_and_concat_keeps_order() {
        let g = Groups::from(vec![
            vec![1.0],
            vec![2.0, 2.5],
            vec![3.0],
            vec![4.0],
            vec![5.0],
        ]);
        let b = g.blocks(2);
        let back: Vec<Vec<f64>> = b.iter().map(<[f64]>::to_vec).collect();
        assert_eq!(back, vec![vec![1.0, 2.0, 2.5], vec![3.0, 4.0], vec![5.0]]);
        assert_eq!(g.blocks(1), g);
        assert_eq!(g.blocks(9).len(), 1);
        let c = Groups::concat(&[b.clone(), Groups::singles(vec![6.0])]);
        assert_eq!(c.len(), 4);
        assert_eq!((b.units(), c.units()), (5, 6));
        assert_eq!(c.values(), &[1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0]);
    }
}
