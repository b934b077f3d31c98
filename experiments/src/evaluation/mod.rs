//! `pate-experiments evaluation`: the fresh runs behind EVALUATION.md ([`plan`]), the tables
//! read off them ([`tables`]) and their place in the documents ([`doc`]).
pub mod doc;
pub mod plan;
pub mod tables;
