# The two commands a user needs (see README.md). Both install what is missing first.
.PHONY: demo test setup

setup:
	scripts/setup.sh

demo: setup
	scripts/demo.sh

test: setup
	scripts/test.sh
