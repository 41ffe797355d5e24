# The Yama submission workspace. Every target is one call of the
# workspace's program, tools/yws (python3 -m yws STAGE): the program holds
# the work and the order of the stages, this file only the names.
# `make help` lists the targets; `python3 -m yws STAGE --help` their flags.

PYTHON := /usr/bin/python3
YWS = PYTHONPATH=tools $(PYTHON) -m yws $(if $(SENDER),--sender "$(SENDER)")

.PHONY: all help deps tree export round-trip series-check kunit selftests \
	vfs-diff mutations bench posting range-diff record-posting review \
	trailers check check-debug test-tools clean

## all: the posting, checked: tree, gates, KUnit and the default kselftest boot first, so its Testing section reports this tree
all: deps
	@$(YWS) all

## help: list the targets
help:
	@awk -F": " '/^## /{sub(/^## /,""); printf "  %-15s %s\n", $$1, substr($$0, length($$1) + 3)}' Makefile

## deps: install the missing Debian packages (apt-get) and fetch the base tarball (apt-get source)
deps:
	@$(YWS) deps

## tree: build/linux, the b4 prep branch: base, cover commit, series/ (FORCE=1 takes series/ over unexported work)
tree: deps
	@$(YWS) tree $(if $(FORCE),--force)

## export: write the tree's commits into series/
export:
	@$(YWS) export

## round-trip: series/ is byte for byte what make export writes
round-trip: tree
	@$(YWS) round-trip

## series-check: per patch checkpatch --strict, W=1 + sparse build, kernel-doc; tip config matrix
series-check: tree
	@$(YWS) series-check

## kunit: kunit.py run --arch=x86_64 --kunitconfig=security/yama in the tree
kunit: tree
	@$(YWS) kunit

## selftests: the yama kselftests installed and run by run_kselftest.sh, one QEMU boot per scenario (SCENARIO=name)
selftests: tree
	@$(YWS) selftests $(SCENARIO)

## vfs-diff: Yama's link rules against the VFS's on random cases (VFSDIFF_SEED=, VFSDIFF_CASES=; VFSDIFF_CASE= replays one)
vfs-diff: tree
	@$(YWS) vfs-diff $(if $(VFSDIFF_SEED),--seed $(VFSDIFF_SEED)) $(if $(VFSDIFF_CASES),--cases $(VFSDIFF_CASES)) $(if $(VFSDIFF_CASE),--case $(VFSDIFF_CASE))

## mutations: break one rule at a time (kunit/mutations, selftests/mutations): the stage must fail (MUTATIONS="a b")
mutations: tree
	@$(YWS) mutations $(MUTATIONS)

## bench: the cost of Yama's checks, measured in QEMU (ratios against Yama off)
bench: tree
	@$(YWS) bench

## posting: b4 send -o from the tree into out/posting/vN/, proven, with a Testing section from this tree's results (RERUN=1 runs stale stages first)
posting: tree
	@$(YWS) posting $(if $(RERUN),--rerun)

## range-diff: b4 diff of the last posted revision against this posting
range-diff: tree
	@$(YWS) range-diff

## record-posting: record out/posting/vN as posted (cover-letter/posted/) and start vN+1
record-posting:
	@$(YWS) record-posting

## review: a maintainer's view of MBOX=FILE: b4 am onto a fresh base, then the gates, KUnit, kselftests, range-diff
review: deps
	@$(YWS) review "$(MBOX)"

## trailers: b4 trailers -u from the replies in MBOX=FILE onto the tree's commits, then export
trailers:
	@$(YWS) trailers "$(MBOX)"

## check: all tests: tools, tree, round-trip, gates, KUnit, kselftests, posting proof; summary and "N passed, N failed"
check: deps
	@$(YWS) check

## check-debug: the series on a debug kernel (KASAN, lockdep, ...): stress, bad input, kselftests, KUnit at boot
check-debug: tree
	@$(YWS) check-debug

## test-tools: the tests of the workspace itself (tools/yws/tests)
test-tools:
	@$(YWS) test-tools

## clean: remove build/ and out/ (refused while the tree has work not in series/; FORCE=1)
clean:
	@$(YWS) clean $(if $(FORCE),--force)
