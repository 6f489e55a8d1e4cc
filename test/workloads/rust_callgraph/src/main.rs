// SPDX-License-Identifier: Apache-2.0
//! The known call graph of callgraph.c, in Rust: work in the ratio 3:2:1
//!   main -> run_loop -> path_heavy -> leaf_heavy     (50%)
//!   main -> run_loop -> path_medium -> leaf_medium   (33.3%)
//!   main -> run_loop -> leaf_light                   (16.7%)
//! through generic and trait-object code, so that names need demangling.
//! Usage: rust_callgraph SECONDS
use std::hint::black_box;
use std::time::{Duration, Instant};

trait Work {
    fn units(&self) -> u64;
}

struct Heavy;
struct Medium;

impl Work for Heavy {
    fn units(&self) -> u64 {
        3
    }
}
impl Work for Medium {
    fn units(&self) -> u64 {
        2
    }
}

/// The work itself, the same loop in every leaf (inlined into each, so
/// the samples land in the leaf and the ratio is the units' ratio).
#[inline(always)]
fn spin(units: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..black_box(units) * 20000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    black_box(x)
}

#[inline(never)]
fn leaf_heavy<W: Work>(w: &W, seed: u64) -> u64 {
    spin(w.units(), seed)
}

#[inline(never)]
fn leaf_medium(w: &dyn Work, seed: u64) -> u64 {
    spin(w.units(), seed)
}

#[inline(never)]
fn leaf_light(seed: u64) -> u64 {
    spin(1, seed)
}

#[inline(never)]
fn path_heavy(seed: u64) -> u64 {
    black_box(leaf_heavy(&Heavy, seed)) ^ 1
}

#[inline(never)]
fn path_medium(seed: u64) -> u64 {
    black_box(leaf_medium(&Medium, seed)) ^ 1
}

#[inline(never)]
fn run_loop(seconds: f64) -> (u64, u64) {
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut rounds, mut x) = (0u64, 1u64);
    while Instant::now() < end {
        x = path_heavy(x);
        x = path_medium(x);
        x = leaf_light(x);
        rounds += 1;
    }
    (rounds, x)
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let (rounds, x) = run_loop(seconds);
    println!("rounds {rounds} sink {x}");
}
