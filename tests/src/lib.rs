//! Helpers for the end-to-end tests (they live in `tests/tests/`).
