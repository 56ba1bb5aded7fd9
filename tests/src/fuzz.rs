//! Fuzzing harness for the crates' `tests/integration/fuzz.rs`: property tests that the ordinary
//! `cargo test` runs (stable toolchain, no libFuzzer). The runner, the seed files and the
//! JSON strategies for reply parsers live here so every target fuzzes the same way; what a
//! target checks, its seed, its odd values and the field names it reads stay in its file.

use std::path::Path;

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Map, Value};

/// Runs `test` on `cases` inputs from `strategy`, drawn from `seed`, so that CI runs are
/// repeatable; `PROPTEST_CASES` and `PROPTEST_RNG_SEED` override them to fuzz longer or
/// elsewhere. A failing input is shrunk and reported in the panic. No regression files are
/// written next to the sources: a failure, once fixed, goes into the target's seeds.
pub fn fuzz<S: Strategy>(
    seed: u64,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let defaults = Config::default();
    let config = Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            defaults.cases
        } else {
            cases
        },
        rng_seed: if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
            defaults.rng_seed
        } else {
            RngSeed::Fixed(seed)
        },
        failure_persistence: None,
        ..defaults
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{e}");
    }
}

/// The seed inputs (regressions and tricky cases, which run before the random ones): the
/// files in `dir` whose names start with `prefix` (`""`: all of them), sorted, as
/// `(file name, bytes)`. Panics when there are none, so that a moved or renamed seed cannot
/// quietly stop running.
pub fn seeds(dir: &Path, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let files = crate::files_in(dir, |p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
    });
    assert!(!files.is_empty(), "no seeds {prefix}* in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into());
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, bytes)
        })
        .collect()
}

/// JSON strategies aimed at one reply parser: arbitrary JSON keyed mostly by the fields it
/// reads, objects with some of a given set of fields, and mutations of real fixtures, all
/// with the parser's own odd values as leaves. A target defines one as a constant.
#[derive(Debug, Clone, Copy)]
pub struct JsonFuzz {
    /// The field names the parser reads: three object keys in four are drawn from them.
    pub keys: &'static [&'static str],
    /// The leaves: values the parser finds odd (blanks, signs, huge numbers, wrong types).
    pub scalar: fn() -> BoxedStrategy<Value>,
    /// How deep [`JsonFuzz::value`] nests, and about how many values it holds at most.
    pub depth: u32,
    pub size: u32,
    /// Whether [`JsonFuzz::object`] may draw as many fields as it is given keys (`true`), or
    /// at most one fewer (`false`, so a one-key object stays empty).
    pub every_key: bool,
}

impl JsonFuzz {
    /// Arbitrary JSON: arrays and objects of odd scalars, objects keyed mostly by `keys`.
    pub fn value(self) -> BoxedStrategy<Value> {
        let key = prop_oneof![
            3 => select(self.keys).prop_map(String::from).boxed(),
            1 => "\\PC{0,6}".boxed(),
        ];
        (self.scalar)()
            .prop_recursive(self.depth, self.size, 6, move |inner| {
                prop_oneof![
                    vec(inner.clone(), 0..5).prop_map(Value::Array),
                    btree_map(key.clone(), inner, 0..6)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
            .boxed()
    }

    /// An object with some of `keys`, each an odd scalar or arbitrary JSON: a reply in the
    /// right shape whose values test the parser past its first checks.
    pub fn object(
        self,
        keys: &'static [&'static str],
    ) -> impl Strategy<Value = Map<String, Value>> {
        let fields = 0..keys.len() + usize::from(self.every_key);
        vec(
            (
                select(keys),
                prop_oneof![4 => (self.scalar)(), 1 => self.value()],
            ),
            fields,
        )
        .prop_map(|fields| fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// A change to one place of a fixture: mostly a new odd scalar, else a removal or
    /// arbitrary JSON.
    pub fn mutation(self) -> impl Strategy<Value = Mutation> {
        prop_oneof![
            1 => any::<Index>().prop_map(Mutation::Remove),
            3 => (any::<Index>(), (self.scalar)()).prop_map(|(at, v)| Mutation::Replace(at, v)),
            1 => (any::<Index>(), self.value()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        ]
    }
}

/// A change to one place of a JSON value, the place an index into its [`pointers`].
#[derive(Debug, Clone)]
pub enum Mutation {
    Remove(Index),
    Replace(Index, Value),
}

/// Every JSON pointer into `value` (its own, `""`, first): the places a [`Mutation`] picks
/// from.
pub fn pointers(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_pointers(value, "", &mut out);
    out
}

fn collect_pointers(value: &Value, at: &str, out: &mut Vec<String>) {
    out.push(at.to_owned());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let k = k.replace('~', "~0").replace('/', "~1");
                collect_pointers(v, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_pointers(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Applies `mutations` in turn to `value`, whose pointers (before any change) are `paths`;
/// a place already gone is left alone, so a fixture can take any list of them.
pub fn mutate(value: &mut Value, paths: &[String], mutations: &[Mutation]) {
    for m in mutations {
        let (Mutation::Remove(at) | Mutation::Replace(at, _)) = m;
        let path = &paths[at.index(paths.len())];
        let Some((parent, last)) = path.rsplit_once('/') else {
            continue;
        };
        match m {
            Mutation::Remove(_) => match value.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.remove(&last.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(items)) => {
                    if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                        items.remove(i);
                    }
                }
                _ => {}
            },
            Mutation::Replace(_, new) => {
                if let Some(slot) = value.pointer_mut(path) {
                    *slot = new.clone();
                }
            }
        }
    }
}
