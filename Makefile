# Conveniences over the scripts, which do the work.
PREFIX ?= /usr/local

.PHONY: build test install deb bench

build:
	swift build -c release

test:
	scripts/test

install:
	scripts/install "$(PREFIX)"

deb:
	scripts/package

bench:
	scripts/bench
