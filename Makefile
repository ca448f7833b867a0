# placed — build, test and install.
#
#   make deps      install the Debian packages the build, tests and benchmarks need
#   make           build/placed and build/placectl, on every online CPU (an explicit -j wins)
#   make run       run placed in the foreground from the tree (default profile)
#   make check     every test; ends with "N passed, N failed, N skipped"
#   make check-sanitize   the same under ASan + UBSan (in build-san/)
#   make check-pidns      the live tests inside a PID namespace (tests/run-pidns.sh)
#   make check-kernels    the live tests inside qemu on Debian 12's kernels (tests/kernels/)
#   make check-topologies the live topology test in a qemu guest of 2 packages, 4 LLCs, 2 nodes (tests/topologies/)
#   make fuzz      each libFuzzer harness (tests/fuzz/) for FUZZ_SECONDS (in build-fuzz/)
#   make install   honours DESTDIR and PREFIX
#   make deb       the Debian package, in build/deb/ (make check-package tests it)
#
# lib/*.c builds into build/libplaced.a, which the daemon, placectl and the
# tests link. lib/*.bpf.c become BPF objects and skeleton headers in build/.

# Build on every online CPU unless a -j was given (on the command line, in
# MAKEFLAGS, or by a parent make) or clean is among the goals (make clean all
# must not race). GNU make 4.3 hides a command line -j from the makefile, but
# that -j still wins over the one added here.
ifeq ($(MAKELEVEL)$(filter -j% --jobserver%,$(MAKEFLAGS) $(shell printenv MAKEFLAGS))$(filter clean,$(MAKECMDGOALS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
# Debian's dbus-daemon reads /usr/share/dbus-1/system.d and /etc/dbus-1/system.d only;
# polkit reads actions only from /usr/share/polkit-1/actions.
DBUS_POLICYDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/share/dbus-1/system.d,/etc/dbus-1/system.d)
POLKIT_ACTIONSDIR ?= /usr/share/polkit-1/actions
RUNSTATEDIR ?= /run

BUILD ?= build
VERSION := 0.1.0

DEB_PACKAGES := build-essential pkg-config clang llvm bpftool libbpf-dev \
	libsystemd-dev libcpupower-dev libnl-3-dev libnl-genl-3-dev libinih-dev \
	libevent-dev libjson-c-dev libcmocka-dev dbus systemd rt-tests linux-perf \
	stress-ng gnuplot-nox clang-format util-linux procps python3 libclang-rt-14-dev \
	debhelper dpkg-dev lintian \
	redis-server redis-tools postgresql iperf3 sockperf sysbench
# tests/test-metrics.sh: promtool (in prometheus) and a strict OpenMetrics parser
DEB_PACKAGES += prometheus python3-prometheus-client
# make check-system: follow = power-profiles against the real daemon
DEB_PACKAGES += power-profiles-daemon
# make check-kernels: qemu (TCG) and a static busybox for the initramfs
DEB_PACKAGES += qemu-system-x86 busybox-static

PKGS := libsystemd libnl-3.0 libnl-genl-3.0 inih libevent libbpf json-c
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcpupower -lm
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)

SANITIZE ?=
SAN_FLAGS := $(if $(SANITIZE),-fsanitize=address -fsanitize=undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wformat=2 \
	-D_GNU_SOURCE -Ilib -I$(BUILD) $(PKG_CFLAGS) $(SAN_FLAGS) \
	-DPLACED_VERSION=\"$(VERSION)\" \
	-DPLACED_SYSCONFDIR=\"$(SYSCONFDIR)\" \
	-DPLACED_DATADIR=\"$(DATADIR)\" \
	-DPLACED_RUNSTATEDIR=\"$(RUNSTATEDIR)\" \
	-MMD -MP
override LDFLAGS += $(SAN_FLAGS)

BPF_SRCS  := $(wildcard lib/*.bpf.c)
BPF_OBJS  := $(patsubst lib/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst lib/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

LIB_SRCS := $(filter-out %.bpf.c,$(wildcard lib/*.c))
LIB_OBJS := $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRCS))
LIB      := $(BUILD)/libplaced.a

PLACECTL_SRCS := $(wildcard daemon/placectl*.c)
PLACED_SRCS   := $(filter-out $(PLACECTL_SRCS),$(wildcard daemon/*.c))
PLACED_OBJS   := $(patsubst daemon/%.c,$(BUILD)/daemon/%.o,$(PLACED_SRCS))
PLACECTL_OBJS := $(patsubst daemon/%.c,$(BUILD)/daemon/%.o,$(PLACECTL_SRCS))

TEST_SRCS := $(wildcard tests/test-*.c)
TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# Per test link flags: test-policy fails calloc() on purpose (out of memory).
TEST_LDFLAGS_test-policy := -Wl,--wrap=calloc

# Helpers the shell tests run (a fake polkit, a bus client).
HELPER_BINS := $(patsubst tests/helpers/%.c,$(BUILD)/helpers/%,$(wildcard tests/helpers/*.c))

# Workloads for the benchmarks and the real placement tests.
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

CLANG_FORMAT ?= clang-format
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find lib daemon tests -name '*.[ch]')

# Fuzzing (tests/fuzz/): one harness per reader of outside input. "make fuzz"
# builds them with clang and libFuzzer and runs each for FUZZ_SECONDS, growing
# a scratch corpus in $(FUZZ_BUILD)/corpus/ from the seeds in the tree. "make
# check" links the same harnesses to a plain main() with ASan and UBSan and
# replays the seeds once (tests/test-fuzz-corpus.sh); fuzz-selftest proves a
# crashing harness fails that test.
FUZZ_NAMES   := config snapshot journal replay
FUZZ_SECONDS ?= 30
FUZZ_BUILD   ?= build-fuzz
FUZZ_SAN     := -fsanitize=address -fsanitize=undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
FUZZ_CFLAGS   = $(filter-out -MMD -MP,$(CFLAGS)) -Itests/fuzz
REPLAY_LIB   := $(BUILD)/fuzz/libplaced-san.a
REPLAY_BINS  := $(patsubst %,$(BUILD)/fuzz/replay-%,$(FUZZ_NAMES) selftest)
FUZZER_LIB   := $(BUILD)/fuzz/libplaced-fuzzer.a
FUZZER_BINS  := $(patsubst %,$(BUILD)/fuzz/fuzz-%,$(FUZZ_NAMES))

.PHONY: all deps run check check-unit check-sanitize check-system format format-check install clean bench \
	fuzz fuzz-bins deb check-package

all: $(BUILD)/placed $(BUILD)/placectl

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "Installing:" $$missing; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	else \
		echo "All build, test and benchmark packages are installed."; \
	fi

$(BUILD)/bpf/%.bpf.o: lib/%.bpf.c $(wildcard lib/*.h)
	@mkdir -p $(dir $@)
	clang -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ilib -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	bpftool gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/lib/%.o: lib/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/daemon/%.o: daemon/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/placed: $(PLACED_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/placectl: $(PLACECTL_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests $(LDFLAGS) $(TEST_LDFLAGS_$*) -o $@ $< $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

$(BUILD)/helpers/%: tests/helpers/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

$(BUILD)/bench/%: tests/bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS) -lpthread

$(BUILD)/fuzz/san/%.o: lib/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(FUZZ_SAN) -c $< -o $@

$(REPLAY_LIB): $(patsubst lib/%.c,$(BUILD)/fuzz/san/%.o,$(LIB_SRCS))
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/fuzz/replay-%: tests/fuzz/fuzz-%.c tests/fuzz/replay-main.c tests/fuzz/fuzz.h $(REPLAY_LIB)
	$(CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -o $@ $< tests/fuzz/replay-main.c $(REPLAY_LIB) $(PKG_LIBS)

$(BUILD)/fuzz/lf/%.o: lib/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(FUZZER_LIB): $(patsubst lib/%.c,$(BUILD)/fuzz/lf/%.o,$(LIB_SRCS))
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz.h $(FUZZER_LIB)
	$(CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZER_LIB) $(PKG_LIBS)

fuzz-bins: $(FUZZER_BINS)

fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang fuzz-bins
	@set -e; for n in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
		echo "== fuzz-$$n for $(FUZZ_SECONDS) s"; \
		$(FUZZ_BUILD)/fuzz/fuzz-$$n -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			$(FUZZ_BUILD)/corpus/$$n tests/fuzz/corpus/$$n; \
	done

run: all
	daemon/run-dev.sh $(BUILD)

check-unit: all $(TEST_BINS) $(HELPER_BINS)

check: all $(TEST_BINS) $(BENCH_BINS) $(REPLAY_BINS) $(HELPER_BINS)
	@tests/run-tests.sh $(BUILD)

check-sanitize:
	$(MAKE) BUILD=build-san SANITIZE=1 check

check-system: all
	@tests/system/run-system-tests.sh $(BUILD)

# The live tests and those that start placed, inside a PID namespace of
# their own (tests/run-pidns.sh): "pidns: N passed, N failed, N skipped".
.PHONY: check-pidns
check-pidns: all $(TEST_BINS) $(BENCH_BINS) $(REPLAY_BINS) $(HELPER_BINS)
	@tests/run-pidns.sh $(BUILD)

# Debian 12's 6.1 and 6.12 and the running kernel, each booted in qemu with
# the live tests inside; one line per kernel (tests/kernels/run-matrix.sh).
.PHONY: check-kernels
check-kernels: all $(TEST_BINS) $(BENCH_BINS)
	@tests/kernels/run-matrix.sh $(BUILD)

# Debian 12's 6.12 in a qemu guest of 2 packages, 4 LLCs (2 a package), SMT
# and 2 NUMA nodes, under KVM where it boots there, else TCG, with the live
# topology test inside; one line (tests/topologies/run-topologies.sh).
.PHONY: check-topologies
check-topologies: all $(TEST_BINS) $(BENCH_BINS)
	@tests/topologies/run-topologies.sh $(BUILD)

# The Debian package, built with dpkg-buildpackage in a copy of the tree (it
# writes its results into the parent directory) and moved into $(DEB_OUT):
# placed_VERSION_ARCH.deb, its -dbgsym, the source (.dsc, .tar.xz, so that
# lintian checks debian/ too), .buildinfo and .changes.
DEB_OUT ?= $(BUILD)/deb
deb:
	@set -e; tmp=$$(mktemp -d /tmp/placed-deb.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	mkdir "$$tmp/placed"; \
	tar -cf - --exclude=./.git --exclude='./build*' --exclude=./debian/placed \
		--exclude='./debian/.debhelper' . | tar -C "$$tmp/placed" -xf -; \
	(cd "$$tmp/placed" && dpkg-buildpackage -us -uc) >"$$tmp/build.log" 2>&1 || \
		{ tail -n 40 "$$tmp/build.log"; echo "dpkg-buildpackage failed" >&2; exit 1; }; \
	rm -rf $(DEB_OUT); mkdir -p $(DEB_OUT); \
	mv "$$tmp"/*.deb "$$tmp"/*.dsc "$$tmp"/*.tar.* "$$tmp"/*.buildinfo "$$tmp"/*.changes \
		"$$tmp/build.log" $(DEB_OUT)/; \
	ls $(DEB_OUT)/*.deb

# lintian on the package, then its life cycle under a real systemd: install,
# upgrade, remove, purge (tests/system/check-package.sh).
check-package: deb
	@tests/system/check-package.sh $(DEB_OUT)

format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check:
	@$(CLANG_FORMAT) --dry-run -Werror $(FORMAT_FILES) && echo "clang-format: clean"

install: all
	install -Dm755 $(BUILD)/placed $(DESTDIR)$(SBINDIR)/placed
	install -Dm755 $(BUILD)/placectl $(DESTDIR)$(BINDIR)/placectl
	install -d $(DESTDIR)$(DATADIR)/placed/profiles $(DESTDIR)$(SYSCONFDIR)/placed/placed.conf.d \
		$(DESTDIR)$(SYSCONFDIR)/placed/profiles
	install -m644 conf/profiles/*.conf $(DESTDIR)$(DATADIR)/placed/profiles/
	test -e $(DESTDIR)$(SYSCONFDIR)/placed/placed.conf || \
		install -m644 conf/placed.conf $(DESTDIR)$(SYSCONFDIR)/placed/placed.conf
	install -d $(DESTDIR)$(SYSCONFDIR)/placed/rules.d
	test -e $(DESTDIR)$(SYSCONFDIR)/placed/rules.d/example.conf || \
		install -m644 conf/rules.d/example.conf $(DESTDIR)$(SYSCONFDIR)/placed/rules.d/example.conf
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' systemd/placed.service > $(DESTDIR)$(UNITDIR)/placed.service
	chmod 644 $(DESTDIR)$(UNITDIR)/placed.service
	install -Dm644 systemd/org.placed1.conf $(DESTDIR)$(DBUS_POLICYDIR)/org.placed1.conf
	install -Dm644 systemd/org.placed1.policy $(DESTDIR)$(POLKIT_ACTIONSDIR)/org.placed1.policy
	for m in daemon/*.[1-8] conf/*.[1-8]; do [ -f "$$m" ] || continue; \
		s=$${m##*.}; install -Dm644 "$$m" $(DESTDIR)$(MANDIR)/man$$s/$$(basename $$m); done

bench: all $(BENCH_BINS)
	python3 tests/bench/bench.py --build $(BUILD) $(BENCH_ARGS)
	bash tests/bench/sampler-cost.sh --build $(BUILD) $(SAMPLER_ARGS)

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJS:.o=.d) $(PLACED_OBJS:.o=.d) $(PLACECTL_OBJS:.o=.d) $(TEST_BINS:=.d)
.SECONDARY:
