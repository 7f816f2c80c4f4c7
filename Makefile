# FareSync — `make demo` and `make test` work on a fresh machine: they install what is missing first.
SWIFT ?= swift
FARESYNC = .build/debug/faresync

.PHONY: setup build demo test check lint format release clean dev-broker crash fuzz bench soak partitions

## Install what the build and the tests need, if missing (Debian; run as root or with sudo).
setup:
	@command -v $(SWIFT) >/dev/null || { echo "make: a Swift 6 toolchain is required (swift not found)"; exit 1; }
	@missing=""; \
	  [ -f /usr/include/sqlite3.h ] || missing="$$missing libsqlite3-dev"; \
	  [ -f /usr/include/librdkafka/rdkafka_mock.h ] || missing="$$missing librdkafka-dev"; \
	  command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	  command -v python3 >/dev/null || missing="$$missing python3"; \
	  command -v kcat >/dev/null || missing="$$missing kcat"; \
	  command -v sqlite3 >/dev/null || missing="$$missing sqlite3"; \
	  command -v curl >/dev/null || missing="$$missing curl"; \
	  command -v ip >/dev/null || missing="$$missing iproute2"; \
	  command -v wrk >/dev/null || missing="$$missing wrk"; \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	  if [ -n "$$missing" ]; then \
	    echo "make: installing$$missing"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; \
	  fi
	@python3 -c "import jsonschema, rfc3339_validator" 2>/dev/null || python3 -m pip install -q jsonschema rfc3339-validator
	@python3 -c "import google.cloud.firestore" 2>/dev/null || python3 -m pip install -q google-cloud-firestore
	@python3 -c "import firebase_admin, jwt, cryptography, requests" 2>/dev/null || python3 -m pip install -q firebase-admin PyJWT cryptography requests
	@python3 -c "import schemathesis" 2>/dev/null || python3 -m pip install -q schemathesis
	@{ command -v chromium >/dev/null && [ -x /usr/bin/chromedriver ]; } || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver; }
	@python3 -c "import selenium, axe_selenium_python" 2>/dev/null || python3 -m pip install -q selenium axe-selenium-python
	@command -v java >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq openjdk-17-jre-headless; }

build: setup
	$(SWIFT) build

## Simulate a small day of traffic, replay it into a fresh embedded store, print what happened.
demo: build
	$(FARESYNC) demo

## The style check, the debug build, then the stages of Tests/lib/stages.py, several at once: the Swift tests (unit,
## property, integration; the stores' tests also on a throwaway PostgreSQL server), the command-line, Kafka, PostgreSQL,
## crash, Firestore, HTTP, console, two-server, fuzz-smoke and benchmark checks. Ends with a table: stage, seconds, checks.
test: setup
	SWIFT=$(SWIFT) python3 Tests/lib/stages.py $(FARESYNC)

## While editing: the style check and the Swift tests (the stores' tests also on a throwaway
## PostgreSQL server), without the integration scripts.
check: setup lint
	$(SWIFT) build --build-tests
	bash Tests/lib/with_postgres.sh $(SWIFT) test --skip-build

## The code is formatted as .swift-format says (`make format` formats it), and the layout's rules
## hold (Tests/lib/layout_rules.py: file and function lengths, the README, links, no build output).
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Fuzz Package.swift
	python3 Tests/lib/layout_rules.py

format:
	$(SWIFT) format --in-place --recursive Sources Tests Fuzz Package.swift

## The benchmarks of BENCHMARKS.md, release build, full sizes (several minutes).
bench: setup
	@command -v jcmd >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq openjdk-17-jdk-headless; }
	$(SWIFT) build -c release --product faresync
	$(SWIFT) build -c release --product faresync-bench
	bash Tests/lib/with_postgres.sh .build/release/faresync-bench
	python3 Tests/http/guessing_load.py .build/release/faresync "$$(mktemp -d)" --latency-goal

## The crash harness at length: replay and worker, each SIGKILLed 25 times.
crash: build
	bash Tests/crash/crash.sh $(FARESYNC) 25 $${SEED:-2026}

## The partition harness at length (run as root): PostgreSQL, the dev broker, serve, three workers, the
## Firestore emulator and the mirror, each in a network namespace; every kind of cut, long and short,
## for three seeds in a row (`SEEDS="…"`). `make test` runs its short form, one seed and four cuts.
partitions: build
	for seed in $${SEEDS:-1 2 3}; do python3 Tests/partitions/partitions.py $(FARESYNC) --seed $$seed || exit 1; done

## The soak (not part of `make test`; the release build, as deployed): the worker mirroring into the
## Firestore emulator, serve and 50 users' app loop for SOAK_MINUTES (default 30); resident sets flat,
## mirror lag bounded, out/soak/soak.png.
soak: setup
	@python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q matplotlib
	$(SWIFT) build -c release --product faresync
	bash Tests/soak/soak.sh .build/release/faresync

## libFuzzer over the event decoder and the log-line parser (FUZZ_SECONDS, default 600).
fuzz: build
	bash Fuzz/run.sh $${FUZZ_SECONDS:-600}

## A local Kafka-protocol broker (librdkafka's mock cluster) for development.
dev-broker: build
	$(FARESYNC) dev-broker --bootstrap-file .dev-broker

release: setup
	$(SWIFT) build -c release

clean:
	rm -rf .build faresync-demo.sqlite*
