# The Yama submission workspace. Every target is a thin call into the script
# of the same name in tools/; the scripts hold the work, this file only the
# order of the stages. `make help` lists the targets.

BASE ?= linux-6.12
# SENDER="Name <address>" overrides git config user.name/user.email
# (tools/identity decides; unset here on purpose).
export BASE SENDER

TOOLS := tools

.PHONY: all help deps tree export round-trip series-check kunit selftests vfs-diff mutations bench \
	posting range-diff record-posting review trailers check check-debug test-tools clean

## all: the posting, checked: gates, KUnit and the default kselftest boot run first, so its Testing section reports real results
all: series-check
	@$(TOOLS)/kunit
	@SCENARIOS=default $(TOOLS)/selftests
	@$(TOOLS)/posting

## help: list the targets
help:
	@awk -F": " '/^## /{sub(/^## /,""); printf "  %-15s %s\n", $$1, substr($$0, length($$1) + 3)}' Makefile

## deps: install the Debian packages the workspace needs (only the missing ones)
deps:
	@QUIET=1 $(TOOLS)/deps

## tree: build/linux: extract the base (fixed base commit) and git am series/ when missing or when series/ changed (REAPPLY=1, FORCE=1)
tree: deps
	@$(TOOLS)/tree

## export: write the tree's commits since the base back into series/
export:
	@$(TOOLS)/export

## round-trip: series/ is byte for byte what make export writes from the commit it was synchronised with
round-trip: tree
	@$(TOOLS)/round-trip

## series-check: per patch checkpatch, W=1+sparse build, kernel-doc; tip config matrix
series-check: tree
	@$(TOOLS)/series-check

## kunit: Yama's suites in the test kernel (tools/test-kernel, shared with selftests), booted by kunit.py exec --arch=x86_64 (QEMU)
kunit: tree
	@$(TOOLS)/kunit

## selftests: boot the series in QEMU per scenario and run the Yama kselftests
selftests: tree
	@$(TOOLS)/selftests

## vfs-diff: Yama's link rules against the VFS's, random seed (VFSDIFF_SEED, VFSDIFF_CASES, VFSDIFF_INJECT)
vfs-diff: tree
	@$(TOOLS)/vfs-diff

## mutations: break one rule at a time (kunit/mutations, selftests/mutations, selftests/vfs-diff/inject): the stage must fail
mutations: tree
	@$(TOOLS)/mutations

## bench: benchmarks of Yama's checks (in QEMU) and of the workspace loop
bench: tree
	@$(TOOLS)/bench

## posting: cover letter + b4 -> out/posting/vN/*.eml and thread.mbox, proven
posting: series-check
	@$(TOOLS)/posting

## range-diff: b4 diff -m of the last posted revision against the posting (or series/)
range-diff: tree
	@$(TOOLS)/range-diff

## record-posting: record out/posting/vN as posted (cover-letter/posted/) and start vN+1
record-posting:
	@$(TOOLS)/posting --record

## review: a maintainer's view of MBOX=FILE: b4 am, git am on a fresh base (build/review), gates, KUnit, kselftests, range-diff
review: deps
	@$(TOOLS)/review "$(MBOX)"

## trailers: Reviewed-by/Acked-by/... from the replies in MBOX=FILE onto the tree's commits, exported to series/
trailers: tree
	@$(TOOLS)/trailers "$(MBOX)"

## check: all tests (tools, tree, gates, KUnit, kselftests, posting proof)
check: deps
	@$(TOOLS)/check

## check-debug: KUnit and kselftests on a debug kernel (KASAN, lockdep, ...), stress, bad input, the gates with SYSCTL=n built whole
check-debug: tree
	@$(TOOLS)/check-debug

## test-tools: the tests of the workspace's own scripts
test-tools: deps
	@$(TOOLS)/test-tools

## clean: remove build/ and out/, kernel tree included (export first)
clean:
	@$(TOOLS)/clean
