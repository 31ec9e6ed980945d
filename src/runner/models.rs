//! A model mix's names on the run path: each name is one shared `Arc<str>`, and each request
//! (or session) index gets the name [`ModelSpec::pick`] draws for it, before the rung.

use std::sync::Arc;

use crate::scenario::ModelSpec;

/// The names of a mix, shared by every request that sends one; empty without a mix.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mix {
    spec: Option<ModelSpec>,
    names: Vec<Arc<str>>,
    seed: u64,
}

impl Mix {
    /// The scenario's mix (`model` a list) drawn with `seed` (`workload.seed`); a plain
    /// name gives the empty mix, whose every pick is `None`.
    pub(crate) fn of(spec: &ModelSpec, seed: u64) -> Mix {
        if !spec.is_mix() {
            return Mix::default();
        }
        Mix {
            names: spec.names().into_iter().map(Arc::from).collect(),
            spec: Some(spec.clone()),
            seed,
        }
    }

    /// The name request (or session) `index` sends; `None` without a mix.
    pub(crate) fn pick(&self, index: usize) -> Option<&Arc<str>> {
        let spec = self.spec.as_ref()?;
        let name = spec.pick(self.seed, index as u64);
        self.names.iter().find(|n| &***n == name)
    }

    /// [`Mix::pick`] for indices `0..count`, in order (empty without a mix).
    pub(crate) fn assign(&self, count: usize) -> Vec<Arc<str>> {
        if self.spec.is_none() {
            return Vec::new();
        }
        (0..count).filter_map(|i| self.pick(i).cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::WeightedModel;

    #[test]
    fn a_plain_name_assigns_nothing_and_a_mix_shares_its_names() {
        assert!(Mix::of(&ModelSpec::from("m"), 1).pick(0).is_none());
        assert!(Mix::of(&ModelSpec::from("m"), 1).assign(5).is_empty());
        let spec = ModelSpec::Mix(vec![
            WeightedModel {
                name: "a".into(),
                weight: 1.0,
            },
            WeightedModel {
                name: "b".into(),
                weight: 1.0,
            },
        ]);
        let mix = Mix::of(&spec, 3);
        let names = mix.assign(100);
        assert_eq!(names.len(), 100);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(&**n, spec.pick(3, i as u64));
        }
        // One allocation per name, shared by every request naming it.
        let a: Vec<&Arc<str>> = names.iter().filter(|n| &***n == "a").collect();
        assert!(a.len() > 20 && a.windows(2).all(|w| Arc::ptr_eq(w[0], w[1])));
    }
}
