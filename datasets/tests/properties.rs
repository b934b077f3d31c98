//! Bad input is an error or data, never a panic: every loader on arbitrary bytes.
use std::path::Path;

use datasets::{parse, DatasetError, Format};
use proptest::prelude::*;

/// Bytes biased towards what the parsers look at: request-line starts, separators, quotes,
/// escapes, line ends.
fn dataset_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"GET ".to_vec()),
        Just(b"POST http://localhost:8080/a?b=1 HTTP/1.1".to_vec()),
        Just(b"PUT ".to_vec()),
        Just(b" HTTP/1.1".to_vec()),
        Just(b"Host: x".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\"".to_vec()),
        Just(b",".to_vec()),
        Just(b"\t".to_vec()),
        Just(b"\\x".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"[10/Oct/2000:13:55:36 -0700] \"".to_vec()),
        Just(b"payload,length,attack_type,label\n".to_vec()),
        Just(b"norm".to_vec()),
        Just(b"anom".to_vec()),
        Just(b"benign".to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn loaders_never_panic(bytes in dataset_bytes()) {
        for format in Format::ALL {
            for name in ["normalTraffic.txt", "badqueries.txt", "data.csv", "data.tsv", "access.log"] {
                match parse(format, Path::new(name), &bytes) {
                    Ok(records) => {
                        for r in &records {
                            prop_assert!(r.line >= 1);
                            prop_assert!(!r.method.is_empty());
                        }
                    }
                    Err(DatasetError::Parse { line, path, .. }) => {
                        prop_assert_eq!(path, Path::new(name));
                        prop_assert!(line >= 1, "{format} {name}: line {line}");
                    }
                    Err(e) => prop_assert!(false, "unexpected error kind: {e}"),
                }
            }
        }
    }
}
