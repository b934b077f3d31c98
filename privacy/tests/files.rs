//! Vote files, label files and feature-matrix files: parsing, errors with line numbers,
//! round trips, atomic writes.
use privacy::aggregate::{format_labels, parse_labels};
use privacy::matrix::{read_f32_matrix, write_f32_matrix, F32Matrix};
use privacy::votes::{parse_votes, read_vote_file, write_vote_file, VoteMatrix};
use privacy::PrivacyError;
use std::path::Path;

fn parse_err(text: &str) -> (usize, String) {
    match parse_votes(text, Path::new("votes.csv")) {
        Err(PrivacyError::Parse { line, message, .. }) => (line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn parses_counts_comments_and_blank_lines() {
    let m = parse_votes(
        "# header comment\n180,70\n\n 250 , 0\n# c\n0,250\n",
        Path::new("v"),
    )
    .unwrap();
    assert_eq!(m.queries(), 3);
    assert_eq!(m.classes(), 2);
    assert_eq!(m.row(1), &[250, 0]);
    assert_eq!(m.max_teachers(), 250);
    let m3 = parse_votes("1,2,3\n4,5,6\n", Path::new("v")).unwrap();
    assert_eq!((m3.queries(), m3.classes()), (2, 3));
}

#[test]
fn bad_lines_name_their_line_number() {
    let (line, msg) = parse_err("# c\n180,70\n12,x\n");
    assert_eq!(line, 3);
    assert!(
        msg.contains("\"x\"") && msg.contains("non-negative integer"),
        "{msg}"
    );
    let (line, msg) = parse_err("180,70\n1,2,3\n");
    assert_eq!(line, 2);
    assert!(msg.contains("expected 2"), "{msg}");
    let (line, _) = parse_err("180,70\n-1,3\n");
    assert_eq!(line, 2);
    let (line, _) = parse_err("1.5,2\n");
    assert_eq!(line, 1);
    let (line, msg) = parse_err("7\n");
    assert_eq!(line, 1);
    assert!(msg.contains("at least 2"), "{msg}");
    let (line, _) = parse_err("1,,2\n");
    assert_eq!(line, 1);
    let (_, msg) = parse_err("# only comments\n\n");
    assert!(msg.contains("no data line"));
    // The Display names the file and line.
    let e = parse_votes("1,2\n3\n", Path::new("dir/votes.csv")).unwrap_err();
    assert!(e.to_string().starts_with("dir/votes.csv:2:"), "{e}");
}

#[test]
fn vote_file_round_trip_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("votes.csv");
    let m = VoteMatrix::from_rows(&[[180u64, 70], [0, 250]]).unwrap();
    write_vote_file(&path, &m).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "180,70\n0,250\n");
    assert_eq!(read_vote_file(&path).unwrap(), m);
    // No temporary file left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert!(VoteMatrix::from_rows(&[vec![1u64, 2], vec![3]]).is_err());
    assert!(matches!(
        read_vote_file(&dir.path().join("missing.csv")),
        Err(PrivacyError::Io { .. })
    ));
}

#[test]
fn label_file_round_trip() {
    let labels = vec![Some(0), None, Some(1)];
    let text = format_labels(&labels);
    assert_eq!(text, "0\n-\n1\n");
    assert_eq!(parse_labels(&text, Path::new("l")).unwrap(), labels);
    match parse_labels("0\nmaybe\n", Path::new("l")) {
        Err(PrivacyError::Parse { line: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn matrix_round_trip_and_format_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.bin");
    let m = F32Matrix::new(2, 3, vec![0.5, 0.25, 0.25, 1.0, 0.0, -0.0]).unwrap();
    write_f32_matrix(&path, &m).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"PATEF32\0");
    assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 2);
    assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), 3);
    assert_eq!(bytes.len(), 24 + 4 * 6);
    assert_eq!(f32::from_le_bytes(bytes[24..28].try_into().unwrap()), 0.5);
    assert_eq!(read_f32_matrix(&path).unwrap(), m);
    // Truncated file.
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert!(read_f32_matrix(&path)
        .unwrap_err()
        .to_string()
        .contains("bytes"));
    // Wrong magic.
    let mut bad = bytes.clone();
    bad[0] = b'X';
    std::fs::write(&path, &bad).unwrap();
    assert!(read_f32_matrix(&path)
        .unwrap_err()
        .to_string()
        .contains("magic"));
    // NaN value.
    let mut nan = bytes.clone();
    nan[28..32].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&path, &nan).unwrap();
    let e = read_f32_matrix(&path).unwrap_err().to_string();
    assert!(e.contains("row 0, column 1"), "{e}");
    assert!(F32Matrix::new(2, 2, vec![0.0; 3]).is_err());
}

/// Mostly-zero matrices (a run's TF-IDF features) are written in the sparse layout, read back
/// exactly (bit for bit, -0.0 too), and a damaged sparse file is an error naming what is wrong.
#[test]
fn sparse_matrices_round_trip_and_format_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.bin");
    let (rows, cols) = (3, 100);
    let mut values = vec![0f32; rows * cols];
    values[5] = 0.5;
    values[99] = -0.0;
    values[2 * cols] = 1.0;
    values[2 * cols + 7] = 0.25;
    let m = F32Matrix::new(rows, cols, values).unwrap();
    write_f32_matrix(&path, &m).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"PATESPF\0");
    // 32-byte header, 4 row pointers, 4 stored values (column u32 + value f32 each).
    assert_eq!(bytes.len(), 32 + 8 * 4 + 8 * 4);
    assert!(bytes.len() < 24 + 4 * rows * cols);
    let back = read_f32_matrix(&path).unwrap();
    let bits = |m: &F32Matrix| m.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!((back.rows, back.cols), (rows, cols));
    assert_eq!(bits(&back), bits(&m));
    // Dense data keeps the dense layout.
    let dense = F32Matrix::new(2, 2, vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    write_f32_matrix(&path, &dense).unwrap();
    assert_eq!(&std::fs::read(&path).unwrap()[..8], b"PATEF32\0");
    // Damaged sparse files.
    let cols_at = 32 + 8 * 4;
    let vals_at = cols_at + 4 * 4;
    let check = |bad: Vec<u8>, expect: &str| {
        std::fs::write(&path, &bad).unwrap();
        let e = read_f32_matrix(&path).unwrap_err().to_string();
        assert!(e.contains(expect), "{expect}: {e}");
    };
    check(bytes[..bytes.len() - 1].to_vec(), "bytes");
    let mut out_of_range = bytes.clone();
    out_of_range[cols_at..cols_at + 4].copy_from_slice(&100u32.to_le_bytes());
    check(out_of_range, "row 0: column 100");
    let mut unordered = bytes.clone();
    unordered[cols_at + 12..cols_at + 16].copy_from_slice(&0u32.to_le_bytes());
    check(unordered, "row 2: column 0 after Some(0)");
    let mut backwards = bytes.clone();
    backwards[32 + 16..32 + 24].copy_from_slice(&0u64.to_le_bytes());
    check(backwards, "row 1 ends at stored value 0");
    let mut nan = bytes.clone();
    nan[vals_at..vals_at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    check(nan, "row 0, column 5 is NaN");
    // A small file that claims a matrix beyond memory: an error, not an abort.
    let mut huge = bytes.clone();
    huge[16..24].copy_from_slice(&(1u64 << 58).to_le_bytes());
    check(huge, "do not fit in memory");
}

/// Regression (fuzz/privacy_votes): counts whose sum overflows u64 made `max_teachers` panic
/// (overflow checks) or wrap to a wrong teacher count (release). Now a parse error naming the line,
/// and `max_teachers` saturates on matrices built in code.
#[test]
fn vote_counts_whose_sum_overflows_are_rejected() {
    let (line, message) = parse_err("1,2\n18446744073709551615,1\n");
    assert_eq!(line, 2);
    assert!(message.contains("sum to more than"), "{message}");
    let m = VoteMatrix::from_rows(&[[u64::MAX, 1], [3, 4]]).unwrap();
    assert_eq!(m.max_teachers(), u64::MAX);
}
