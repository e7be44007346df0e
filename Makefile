# Conveniences over the scripts, which do the work.
PREFIX ?= /usr/local

.PHONY: build test install bench

build:
	swift build -c release

test:
	scripts/test

install:
	scripts/install "$(PREFIX)"

bench:
	scripts/bench
