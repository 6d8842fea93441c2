# The live test suites on the board's own kernel (issue 39): the boards in
# QEMU_LIVE_BOARDS (common.sh; default the three x86_64 kernels, 7.2, 6.12
# and 6.1; names as in test.sh; 'none' for none) carry the tests that
# read and change the live tracefs -- tests/live whole, the live parts of
# tests/applets (session-live), in the crate's test binary -- built as static musl
# executables, and run each test as a line of their session, under
# TRBOX_REQUIRE_LIVE=1: a test that asserts a fact of the development
# machine's kernel instead of the kernel's rule fails there. Sourced after
# common.sh by mkinitramfs.sh and test.sh:
#   live_build          `cargo test --profile board-tests --no-run --lib`
#                       (Cargo.toml: the crate's test binary) and its trbox,
#                       into a target directory of
#                       their own (LIVE_TARGET_DIR: the test build's trbox
#                       must not replace make cross's board binary), copied
#                       to LIVE_TARGET_DIR/board-TRIPLE/
#   live_initramfs ROOT the binaries in /usr/lib/trbox-tests, the data they
#                       read at the path they were built with
#                       (CARGO_MANIFEST_DIR: the test sources name it at
#                       compile time), bash (debs-live), /usr/bin/live-test
#                       (guest/live-test),
#                       and one session line per test: `live-test BINARY
#                       NAME`, so that check.sh counts each test as a check,
#                       with its time, and the guest's per-command timeout
#                       names a test that hangs
# The test binaries are listed on the host (`BINARY --list`), so a live
# board's architecture is the host's. The other boards are untouched (LIVE=0).

# LIVE (this board runs them) is set in common.sh, which gives these
# boards more RAM too.
LIVE_TARGET_DIR=${LIVE_TARGET_DIR:-${CARGO_TARGET_DIR:-$REPO/target}/board-tests}
LIVE_BIN_DIR=$LIVE_TARGET_DIR/board-$TRIPLE
# The crate's tests are one binary, the library's unit tests (lib.rs:
# core_tests, live_tests, applets_tests), installed as `tests`; session-live
# selects its live ones. Beside it, the trbox they run.
LIVE_TESTS=tests

live_build() {
	[ "$(uname -m)" = "$ARCH" ] ||
		die "live tests: the test binaries are listed on the host, so a live board must be $(uname -m), not $ARCH (QEMU_LIVE_BOARDS)"
	local json
	say "live tests: cargo test --profile board-tests --no-run --target $TRIPLE --lib, and its trbox (into ${LIVE_TARGET_DIR#"$REPO"/})"
	json=$(cd "$REPO" && CARGO_TARGET_DIR=$LIVE_TARGET_DIR ${CARGO:-cargo} test --profile board-tests --no-run \
		--target "$TRIPLE" --lib --message-format json-render-diagnostics &&
		CARGO_TARGET_DIR=$LIVE_TARGET_DIR ${CARGO:-cargo} build --profile board-tests \
			--target "$TRIPLE" --bin trbox --message-format json-render-diagnostics) ||
		die "live tests: the test build for $TRIPLE failed"
	mkdir -p "$LIVE_BIN_DIR"
	# The test binary as `tests`, and the trbox it runs; a copy then a
	# rename, as boards building at once may copy at once.
	python3 -c '
import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        if m["profile"]["test"] and m["target"]["kind"] == ["lib"]:
            print("tests", m["executable"])
        elif not m["profile"]["test"] and m["target"]["kind"] == ["bin"]:
            print(m["target"]["name"], m["executable"])' <<<"$json" | while read -r t exe; do
		cp "$exe" "$LIVE_BIN_DIR/.$t.$$" && mv -f "$LIVE_BIN_DIR/.$t.$$" "$LIVE_BIN_DIR/$t"
	done
	for t in $LIVE_TESTS trbox; do
		[ -x "$LIVE_BIN_DIR/$t" ] || die "live tests: no $t binary in ${LIVE_BIN_DIR#"$REPO"/} after the build"
	done
}

# The session lines: each line of session-live (BINARY, then libtest's
# filters and --skip options, then ' ## ' notes) becomes one line per test
# it selects, with its notes. A line with the note 'share' has its tests
# shared out over the live boards (common.sh: LIVE_COUNT of them): the
# board at LIVE_INDEX runs every LIVE_COUNT-th, so that each runs on one
# kernel in make test and the three boards fit its time; the other lines
# (what reads the kernel's own formats and state: tests/live, kallsyms)
# run on every live board. QEMU_LIVE_SHARE=0: every test on every board;
# 2 (make test's set, qemu.mk): every line shared.
live_session() {
	local line sel notes bin name share n=0
	while IFS= read -r line; do
		case "$line" in '' | '#'*) continue ;; esac
		sel=${line%% ## *}
		notes=
		[ "$sel" = "$line" ] || notes=" ## ${line#* ## }"
		share=0
		[ "${QEMU_LIVE_SHARE:-1}" != 2 ] || share=1
		case "$notes" in *' ## share'*)
			notes=${notes/ ## share/}
			[ "${QEMU_LIVE_SHARE:-1}" = 0 ] || share=1
			;;
		esac
		set -- $sel
		bin=$1
		shift
		[ -x "$LIVE_BIN_DIR/$bin" ] || die "live tests: session-live names '$bin', which is not one of: $LIVE_TESTS"
		for name in $("$LIVE_BIN_DIR/$bin" --list --format terse "$@" | sed -n 's/: test$//p'); do
			if [ "$share" = 1 ]; then
				n=$((n + 1))
				[ $(((n - 1) % LIVE_COUNT)) = "$LIVE_INDEX" ] || continue
			fi
			printf 'live-test %s %s%s\n' "$bin" "$name" "$notes"
		done
	done <"$QEMU_DIR/session-live"
}

live_initramfs() {
	[ "$LIVE" = 1 ] || return 0
	local root=$1 t lines
	live_build
	mkdir -p "$root/usr/lib/trbox-tests" "$root/usr/bin" "$root$REPO/tests"
	for t in $LIVE_TESTS trbox; do install -m 0755 "$LIVE_BIN_DIR/$t" "$root/usr/lib/trbox-tests/$t"; done
	install -m 0755 "$QEMU_DIR/guest/live-test" "$root/usr/bin/live-test"
	# The tests name their data relative to the package (cargo runs them
	# there) or by its absolute path: the same path on the board.
	cp -r "$REPO/tests/data" "$root$REPO/tests/"
	printf '%s\n' "$REPO" >"$root/usr/lib/trbox-tests/package-dir"
	DEBS=$QEMU_DIR/debs-live "$QEMU_DIR/debbin.sh" "$root"
	lines=$(live_session) || exit 2
	[ -n "$lines" ] || die "live tests: session-live selects no test"
	printf '%s\n' "$lines" >>"$root/etc/trbox/session"
	say "live tests: $(wc -l <<<"$lines") tests of $LIVE_TESTS ($(du -sk "$root/usr/lib/trbox-tests" | cut -f1) KiB of binaries)"
}
