//! `Featurizer::from_json` (the `featurizer.json` artifact) on arbitrary bytes.
//!
//! Property: never panics; an accepted artifact transforms a request without panicking, and
//! writing it back and reading that again gives the same content hash and dimension.
#![no_main]

use featurizer::{Featurizer, RequestParts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(featurizer) = Featurizer::from_json(data) else { return };
    let v = featurizer.transform(&RequestParts::get("/login.php?user=admin'%20or%201=1--"));
    assert!(v.indices.iter().all(|&i| (i as usize) < featurizer.dim()));
    let again = Featurizer::from_json(&featurizer.to_json()).expect("re-reading an artifact this build wrote");
    assert_eq!(again.content_hash(), featurizer.content_hash());
    assert_eq!(again.dim(), featurizer.dim());
});
