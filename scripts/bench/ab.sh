#!/usr/bin/env bash
# A/B of ladder's hot paths: this checkout's working tree (B) against a base commit (A).
#
#   scripts/bench/ab.sh BASE_COMMIT [hotpaths.py options...]
#   scripts/bench/ab.sh main~5 --runs 5 --max-ratio 1.25
#   scripts/bench/ab.sh e1c8a5b --skip rung setup --compare-requests 1000000
#
# Builds both in release (`ladder` and `examples/bigrun`): the base in a temporary git
# worktree, the working tree in place; then scripts/bench/hotpaths.py runs compare of big
# runs, a high-rate rung and prompt setup for both, interleaved, and prints medians and B/A
# ratios. Exits 1 when a guarded figure of B is slower than --max-ratio (default 1.25) times
# A's, 2 on a build or run error. Run it before landing a change that touches those paths
# (BENCHMARKS.md, "Catching regressions"); quote its ratios, not absolute times: the machine
# may be shared.
#
# Base builds share one target folder (AB_TARGET, default ~/.cache/ladder/ab-target) so
# dependencies compile once; binaries are kept per commit in AB_BINS (default
# ~/.cache/ladder/ab-bins/COMMIT), so a second A/B against the same base does not rebuild.
set -euo pipefail

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
base_ref=$1
shift

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
base=$(git -C "$repo" rev-parse --verify "$base_ref^{commit}") || {
    echo "ab.sh: $base_ref is not a commit of $repo" >&2
    exit 2
}
target=${AB_TARGET:-$HOME/.cache/ladder/ab-target}
bins=${AB_BINS:-$HOME/.cache/ladder/ab-bins}
a_dir=$bins/$base
build="nice -n 10 cargo build --release --locked --bin ladder --example bigrun"

if [ ! -x "$a_dir/ladder" ] || [ ! -x "$a_dir/bigrun" ]; then
    wt=$(mktemp -d /tmp/ladder-ab-base.XXXXXX)
    trap 'git -C "$repo" worktree remove --force "$wt" >/dev/null 2>&1 || true; rm -rf "$wt"' EXIT
    git -C "$repo" worktree add --detach "$wt" "$base" >/dev/null
    echo "building A = $base in $wt (target $target)" >&2
    (cd "$wt" && CARGO_TARGET_DIR=$target $build) || {
        echo "ab.sh: base build failed" >&2
        exit 2
    }
    mkdir -p "$a_dir"
    cp "$target/release/ladder" "$target/release/examples/bigrun" "$a_dir/"
fi

b_target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
# One target folder for A and B (CARGO_TARGET_DIR set for the whole script): cargo keys the
# crate's build on its path inside the workspace, not on which tree it came from, and takes it
# as fresh when no source of this tree is newer than the last build, which was A's. B would
# then be A's binary, and the A/B a comparison of A with itself. Touching the crate's roots
# makes cargo compile this tree's sources.
if [ "$(realpath -m "$b_target")" = "$(realpath -m "$target")" ]; then
    touch "$repo/src/lib.rs" "$repo/src/main.rs" "$repo/examples/bigrun.rs"
fi
echo "building B = working tree of $repo ($(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD || echo ' + changes'))" >&2
(cd "$repo" && $build) || {
    echo "ab.sh: working-tree build failed" >&2
    exit 2
}
# Copied, so a rebuild during the runs cannot change B under them.
b_dir=$(mktemp -d /tmp/ladder-ab-b.XXXXXX)
cp "$b_target/release/ladder" "$b_target/release/examples/bigrun" "$b_dir/"

echo "A/B on $(hostname), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
set +e
python3 "$repo/scripts/bench/hotpaths.py" --a "$a_dir/ladder" --bigrun-a "$a_dir/bigrun" \
    --b "$b_dir/ladder" --bigrun-b "$b_dir/bigrun" "$@"
code=$?
rm -rf "$b_dir"
exit $code
