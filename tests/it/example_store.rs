//! A store written outside the crate (`examples/vec_store/store.rs`: its own data
//! structure, tasklatch's public API only) through every engine, by the public entry point
//! `tasklatch::verify::check_store`: the correct store passes them all, and a planted bug
//! (a list without its tenant filter) fails each engine with a readable report.

#[path = "../../examples/vec_store/store.rs"]
mod store;

use store::{Bug, VecStoreFactory};
use tasklatch::verify::{Budget, Verdict, check_store};

#[test]
fn a_store_written_outside_the_crate_passes_every_engine() {
    let report = check_store(&VecStoreFactory::default(), &Budget::everyday());
    println!("{report}");
    assert!(report.passed(), "{report}");
    // Each engine this build has ran in full; the others say they did not run.
    if cfg!(feature = "proptest") {
        assert_eq!(report.proptest, Verdict::Passed { spent: 256 }, "{report}");
    } else {
        assert!(matches!(report.proptest, Verdict::NotRun(_)), "{report}");
    }
    if cfg!(feature = "sim") {
        assert!(
            matches!(report.simulation, Verdict::Passed { spent } if spent >= 48 * 7),
            "{report}"
        );
    } else {
        assert!(matches!(report.simulation, Verdict::NotRun(_)), "{report}");
    }
}

#[test]
fn its_broken_variant_fails_each_engine_with_a_readable_report() {
    let factory = VecStoreFactory {
        bug: Some(Bug::ListsEveryTenant),
    };
    let report = check_store(&factory, &Budget::quick());
    let text = report.to_string();
    println!("{text}");
    assert!(
        text.starts_with("store vec-store (lists every tenant): FAILED"),
        "{text}"
    );
    assert!(report.failed_engines().contains(&"conformance"), "{text}");
    assert!(text.contains("tenants_are_isolated"), "{text}");
    #[cfg(feature = "proptest")]
    assert!(report.failed_engines().contains(&"proptest"), "{text}");
    #[cfg(all(feature = "sim", madsim))]
    {
        assert!(report.failed_engines().contains(&"simulation"), "{text}");
        assert!(
            text.contains("I4 violated"),
            "the oracle names tenant isolation: {text}"
        );
        assert!(text.contains("reproduce: Sim::new"), "{text}");
    }
}
