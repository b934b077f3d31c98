# The two commands a user needs (see README.md). Both install what is missing first.
.PHONY: demo test setup evaluation

setup:
	scripts/setup.sh

demo: setup
	scripts/demo.sh

test: setup
	scripts/test.sh

# Not a README command: the fresh runs behind EVALUATION.md (about 30 min on 2 idle CPU cores, resumable)
# and its tables, written into EVALUATION.md and README.md (pate-experiments evaluation --help).
evaluation: setup
	cargo build --release -p trainer -p proxy -p experiments
	target/release/pate-experiments evaluation
