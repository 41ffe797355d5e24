# The Yama submission workspace. Every target is one call of the
# workspace's program, tools/yws (python3 -m yws COMMAND): the program holds
# the work, the order of the stages and what each does (`make help` prints
# it); this file only maps names and variables to it.

PYTHON := /usr/bin/python3
YWS = PYTHONPATH=tools $(PYTHON) -m yws $(if $(SENDER),--sender "$(SENDER)")
STAGES := prep export round-trip series-check kunit selftests vfs-diff mutations \
	bench posting send trailers check-debug test-tools clean \
	list list-stop

.PHONY: all check review help deps $(STAGES)

all: deps
	@$(YWS) run all

check: deps
	@$(YWS) run check

review: deps
	@$(YWS) run review $(if $(MSGID),--msgid "$(MSGID)") $(if $(MBOX),"$(MBOX)")

help:
	@$(YWS) help

deps:
	@$(YWS) deps

# The stages that test or change the author's tree make it first.
series-check kunit selftests vfs-diff mutations bench posting round-trip: prep
prep: deps

prep:
	@$(YWS) prep $(if $(FORCE),--force)
selftests:
	@$(YWS) selftests $(SCENARIO)
vfs-diff:
	@$(YWS) vfs-diff $(if $(VFSDIFF_SEED),--seed $(VFSDIFF_SEED)) $(if $(VFSDIFF_CASES),--cases $(VFSDIFF_CASES)) $(if $(VFSDIFF_CASE),--case $(VFSDIFF_CASE))
mutations:
	@$(YWS) mutations $(MUTATIONS)
trailers:
	@$(YWS) trailers "$(MBOX)"
check-debug: deps
	@$(YWS) run check-debug
series-check kunit bench posting send round-trip test-tools clean export \
	list list-stop:
	@$(YWS) $@
