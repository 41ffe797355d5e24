# Shared helpers for the workspace scripts: paths, base selection, stage
# banners and verdicts. Sourced, never run.

WS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$WS/build}
OUT=${OUT:-$WS/out}
BASE=${BASE:-linux-6.12}
TREE=${TREE:-$BUILD/linux}
RESULTS=${RESULTS:-$BUILD/results}
# Debian's interpreter, which has the python3-* packages (not a pyenv one).
PYTHON=${PYTHON:-/usr/bin/python3}
SERIES_DIR=${SERIES_DIR:-$WS/series}

# BASE_CONF: another base description (the tests use a tiny base).
base_conf=${BASE_CONF:-$WS/tools/bases/$BASE.conf}
if [ ! -f "$base_conf" ]; then
	echo "error: unknown base '$BASE' (no $base_conf)" >&2
	exit 2
fi
# BASE_VERSION only from a base description (see base_version below).
unset BASE_VERSION
# shellcheck source=bases/linux-6.12.conf
. "$base_conf"
# The base commit id recorded for a package version ("VERSION ID"), next to
# the base description; make tree checks the tree's base against it.
base_id_file=${base_conf%.conf}.id

# base_version: the installed version of the base package (BASE_VERSION in
# a base description that is no package: the tests' tiny base).
base_version() {
	if [ -n "${BASE_VERSION:-}" ]; then
		echo "$BASE_VERSION"
	else
		dpkg-query -W -f='${Version}' "$BASE_PACKAGE" 2>/dev/null || true
	fi
}

# ccache keys on absolute paths unless told a base: with it, a fresh clone
# in another folder (CI) reuses what an earlier run on this machine built.
# Kbuild maps __FILE__ to relative paths itself (-fmacro-prefix-map).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$WS}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# The extra warnings every kernel build of the workspace asks for: W=1's
# compiler flags (the same flags in the gates and the test kernel, which
# make kunit and make selftests boot, so ccache shares their objects), without W=1's kernel-doc run on every
# compiled file (cmd_checkdoc, a perl process per object: a third of a
# ccache-warm build). The kernel-doc gate of series-check checks every C
# file and header a patch touches, against its previous version; the gates
# never counted W=1's kernel-doc lines.
export KBUILD_WARN="W=1 cmd_checkdoc="

# The linker of the test kernel and of the gates' builds in its config:
# ld.lld links vmlinux in a third of GNU ld's time, and an edit's rebuild
# links four times (vmlinux.o, then three kallsyms passes): make's own
# lines say about 4 s of GNU ld against 1.2 s; make bench measured 1-2 s
# less per make kunit and make selftests after an edit (README). Every
# make and Kconfig run of those build folders passes it (Kconfig records
# the linker in .config: a run without it would configure for GNU ld
# again). GNU ld still links the SYSCTL=n tip whole in make check-debug.
export KBUILD_LINK="LD=ld.lld"

# A fixed identity for commits the workspace makes in the tree (the base, and
# the committer of applied patches), so commit ids do not depend on the user.
WS_COMMITTER_NAME=${WS_COMMITTER_NAME:-Yama Workspace}
WS_COMMITTER_EMAIL=${WS_COMMITTER_EMAIL:-yama-workspace@localhost}

# The sender and author of the series (From:, Signed-off-by:): decided in one
# place, tools/identity (SENDER="Name <address>", else git config
# user.name/user.email, else a placeholder that make posting warns about).
# Sets SENDER, SENDER_NAME, SENDER_EMAIL and SENDER_SOURCE.
_identity=$("$WS/tools/identity" --shell) || exit 2
eval "$_identity"
unset _identity

die() {
	echo "error: $*" >&2
	exit 1
}

note() {
	echo "  $*"
}

# stage_begin NAME WHAT: print the banner and remember the start time.
stage_begin() {
	STAGE_NAME=$1
	STAGE_START=$(date +%s)
	echo "== $1: $2"
}

# stage_end VERDICT PASSED FAILED [DETAIL]: print the one-line verdict and
# record it in build/results/NAME.verdict for the summary of make check.
stage_end() {
	local verdict=$1 passed=${2:-0} failed=${3:-0} detail=${4:-}
	local elapsed=$(($(date +%s) - STAGE_START))
	mkdir -p "$RESULTS"
	printf '%s\t%s\t%s\t%s\t%s\n' "$STAGE_NAME" "$verdict" "$passed" \
		"$failed" "$elapsed" >"$RESULTS/$STAGE_NAME.verdict"
	printf '== %s: %s (%d passed, %d failed) in %ds%s\n' "$STAGE_NAME" \
		"$verdict" "$passed" "$failed" "$elapsed" "${detail:+: $detail}"
}

# tree_git ARGS: git in the kernel tree, with the workspace committer.
tree_git() {
	GIT_COMMITTER_NAME=$WS_COMMITTER_NAME \
	GIT_COMMITTER_EMAIL=$WS_COMMITTER_EMAIL \
		git -C "$TREE" "$@"
}

# base_id: the id of the tree's root commit (tag "base").
base_id() {
	git -C "$TREE" rev-parse -q --verify 'refs/tags/base^{commit}' 2>/dev/null
}

# series_patches: the patch files of series/, in the order of series/series.
series_patches() {
	"$PYTHON" "$WS/tools/series.py" "$SERIES_DIR"
}

# series_stamp: one line that changes whenever series/ (its order or any of
# its patches) changes; make tree records it when the tree takes series/,
# and make export when series/ is written from the tree.
series_stamp() {
	{
		cat "$SERIES_DIR/series" 2>/dev/null
		series_patches | while read -r p; do
			cat "$SERIES_DIR/$p" 2>/dev/null
		done
	} | sha1sum | cut -d' ' -f1
}

# with_patch PATCH CMD...: run CMD with PATCH applied to the tree (on top
# of whatever the tree holds, uncommitted edits included), then take PATCH
# back out, also when CMD fails or is interrupted. CMD's status; 2 when
# PATCH does not apply (nothing changed then).
with_patch() {
	local patch=$1 rc
	shift
	git -C "$TREE" apply --check "$patch" 2>/dev/null || {
		echo "error: $patch does not apply to $TREE (nothing changed)" >&2
		return 2
	}
	git -C "$TREE" apply "$patch" || return 2
	trap 'git -C "$TREE" apply -R "$patch"; exit 130' INT TERM
	"$@"
	rc=$?
	trap - INT TERM
	git -C "$TREE" apply -R "$patch" ||
		echo "error: could not take $patch back out of $TREE" >&2
	return $rc
}

# wait_for PID SECONDS: true once PID has ended, false if it still runs
# after SECONDS (for the progress line every 30 s of a long stage).
wait_for() {
	local pid=$1 i
	# polled 5 times a second: a short stage does not wait for a whole one
	for ((i = 0; i < $2 * 5; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.2
	done
	! kill -0 "$pid" 2>/dev/null
}

# merge_config SRC KOUT LOG FRAGMENT...: KOUT/.config from allnoconfig and
# the fragments, by the kernel's scripts/kconfig/merge_config.sh in strict
# mode (-s: a fragment that redefines an option fails), then its own check
# that every requested option is in the final .config. Prints the problem
# and returns 1 on failure; the whole output is in LOG.
merge_config() {
	local src kout log=$3
	src=$(realpath "$1")
	kout=$(realpath -m "$2")
	log=$(realpath -m "$log")
	shift 3
	local frags=() f
	for f in "$@"; do
		frags+=("$(realpath -m "$f")")
	done
	mkdir -p "$kout"
	# merge_config.sh makes its temporary files in the current folder and
	# runs a plain make there: it runs in KOUT, with the Makefile kbuild
	# writes into an O= folder, so the tree's top folder is not touched
	# (test-kernel would see it changed and make the kernel again). The
	# linker reaches that make in MAKEFLAGS.
	[ -f "$kout/Makefile" ] || echo "include $src/Makefile" >"$kout/Makefile"
	if ! (cd "$kout" && env -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
		MAKEFLAGS="$KBUILD_LINK" ARCH=x86_64 "$src/scripts/kconfig/merge_config.sh" -n -s -O "$kout" "${frags[@]}") \
		>"$log" 2>&1; then
		grep -A2 -e "redefined" -e "^Value requested for" "$log" | sed 's/^/  | /' >&2
		echo "merge_config.sh failed, see $log" >&2
		return 1
	fi
	if grep -q "^Value requested for" "$log"; then
		grep -A2 "^Value requested for" "$log" | sed 's/^/  | /' >&2
		echo "$(grep -c "^Value requested for" "$log") requested option(s) not in the kernel config (unmet dependency or unknown symbol), see $log" >&2
		return 1
	fi
}

# test_kernel_dir SRC [EXTRA...]: the build folder of the test kernel of
# tree SRC (tools/test-kernel) with the named extra config fragments; make
# kunit and make selftests share it.
test_kernel_dir() {
	local src=$1 d e
	shift
	if [ "$(realpath "$src")" = "$(realpath -m "$TREE")" ]; then
		d=$BUILD/kernel
	else
		d=$BUILD/kernel-$(basename "$src")
	fi
	for e in "$@"; do
		d=$d+$e
	done
	echo "$d"
}

# lock_test_kernel DIR: hold DIR's lock until this script exits (fd 8), so
# that make kunit and make selftests (or make vfs-diff) started side by
# side take turns building and booting the one test kernel.
lock_test_kernel() {
	mkdir -p "$1"
	exec 8>"$1.lock"
	if ! flock -n 8; then
		note "waiting for another stage that builds or boots $1"
		flock 8
	fi
}
