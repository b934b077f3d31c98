//! One module per `pate-trainer` subcommand.
