# pysnip: build, test, sanitize, bench.
#   make          build ./pysnip
#   make test     unit tests + end-to-end tests + attack corpus
#   make asan     ASan+UBSan build in build-asan/, then the tests against it
#   make bench    latency figures (printed, not asserted)
#   make fuzz     libFuzzer targets (tests/fuzz/) built with clang-14 into build-fuzz/, each run
#                 FUZZ_TIME seconds (default 60); a crash, sanitizer report or leak fails

# pysnip (exec, check-policy, and serve's zygotes) and pysnip-serve (the HTTP front, which
# `pysnip serve` execs) are two binaries so that neither a one-shot run nor a zygote loads
# libmicrohttpd, libcurl and the GnuTLS chain behind them (~1.5 ms of every start; twice the
# mapped areas for every zygote fork and worker exit to walk).
PKGS      := python3-embed libseccomp libcap-ng libcjson
SERVE_PKGS := libmicrohttpd libcurl
# pysnip-kernel (the Jupyter kernel, which `pysnip kernel` execs) is a third, so that only it
# loads libzmq and libcrypto.
KERNEL_PKGS := libzmq libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) $(SERVE_PKGS) $(KERNEL_PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
SERVE_LIBS := $(shell pkg-config --libs $(SERVE_PKGS)) -lcrypt
KERNEL_LIBS := $(shell pkg-config --libs $(KERNEL_PKGS))
PY        ?= /usr/bin/python3
PYTHON311 ?= /usr/bin/python3.11

BUILD   ?= build
BIN     ?= pysnip
SAN     ?=
OPT     ?= -O2

WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
           -Wstrict-prototypes -Wno-unused-parameter
# PIE ?= 0: linked like Debian's own /usr/bin/python3.11 (static libpython, not PIE), since
# relocating a PIE libpython (40k relocations) costs ~1.4 ms on every one-shot start.
PIE     ?= 0
ifeq ($(PIE),1)
PIEFLAG := -fPIE
PIELINK := -pie
PY_ARCHIVE := libpython3.11-pic.a
else
PIEFLAG := -fno-pie
PIELINK := -no-pie
PY_ARCHIVE := libpython3.11.a
endif
HARDEN  := -D_FORTIFY_SOURCE=2 -fstack-protector-strong $(PIEFLAG) -fstack-clash-protection \
           -fcf-protection
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=gnu11 $(WARN) $(HARDEN) $(SAN) -D_GNU_SOURCE -Ihost $(PKG_CFLAGS)
LDFLAGS += $(PIELINK) -Wl,-z,relro,-z,now,-z,noexecstack $(SAN)
# libpython: Debian's libpython3.11, linked statically by default (PY_LINK=shared for the .so).
# Statically, a one-shot run skips resolving libpython's ~10k dynamic symbols (-z now) at
# every start, which is most of the gap to `python3.11 -I -S`; --export-dynamic keeps the C
# API visible to lib-dynload's extension modules, as /usr/bin/python3.11 itself does.
PY_LINK   ?= static
PY_LIBPL  := $(shell $(PYTHON311) -c "import sysconfig; print(sysconfig.get_config_var('LIBPL'))")
PY_PREFIX := $(shell $(PYTHON311) -c "import sys; print(sys.base_prefix)")
PY_VERSION := $(shell $(PYTHON311) -c "import platform; print(platform.python_version())")
CFLAGS  += -DPS_PY_VERSION='"$(PY_VERSION)"'
ifeq ($(PY_LINK),static)
LDLIBS  += $(filter-out -lpython%,$(PKG_LIBS)) $(PY_LIBPL)/$(PY_ARCHIVE) -lexpat -lz -lm -ldl
LDFLAGS += -Wl,--export-dynamic
CFLAGS  += -DPS_PY_PREFIX='"$(PY_PREFIX)"'
else
LDLIBS  += $(PKG_LIBS)
endif

# Sources by folder (host/*/): one pattern rule builds them all. Each binary has its own main
# in host/cli/; everything else is one archive, from which the linker takes only what that main
# reaches (pysnip never pulls in serve/'s objects, so it never links libmicrohttpd or libcurl).
HOST_HDRS := $(wildcard host/*/*.h)
MAINS     := host/cli/main.c host/cli/serve_main.c host/cli/kernel_main.c
LIB_SRCS  := $(filter-out $(MAINS),$(wildcard host/*/*.c))
LIB_OBJS  := $(LIB_SRCS:host/%.c=$(BUILD)/%.o) $(BUILD)/python/pyshim_blob.o \
             $(BUILD)/closure_table.o
SERVE_BIN := $(dir $(BIN))pysnip-serve
KERNEL_BIN := $(dir $(BIN))pysnip-kernel
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
PYSHIM    := $(filter-out pyshim/closure.py,$(wildcard pyshim/*.py))

.PHONY: all test test-unprivileged unit e2e includes asan bench fuzz clean deps

all: $(BIN) $(SERVE_BIN) $(KERNEL_BIN) mpl-cache/.built

# matplotlib's font list, built once for every run (tools/mpl-font-cache)
mpl-cache/.built: tools/mpl-font-cache
	PYTHON=$(PYTHON311) tools/mpl-font-cache mpl-cache

$(BIN): $(BUILD)/cli/main.o $(BUILD)/libpysnip.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(SERVE_BIN): $(BUILD)/cli/serve_main.o $(BUILD)/libpysnip.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(SERVE_LIBS)

$(KERNEL_BIN): $(BUILD)/cli/kernel_main.o $(BUILD)/libpysnip.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(KERNEL_LIBS)

# Made anew each time: `ar rcs` on an old archive keeps members whose sources have gone or
# moved (a stale object defining the same symbol can win the link).
$(BUILD)/libpysnip.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: host/%.c $(HOST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# pyshim is compiled to a marshalled code object by the linked interpreter's version
# and embedded in the binary, so a one-shot run pays no compile.
$(BUILD)/pyshim.marshal: $(PYSHIM) tools/marshal_pyshim.py | $(BUILD)
	$(PYTHON311) -I -S tools/marshal_pyshim.py $@ $(PYSHIM)

# pyshim/closure.py is data (the import closure of every stdlib module): a C table, not code.
$(BUILD)/closure_table.c: pyshim/closure.py tools/closure_table.py | $(BUILD)
	$(PYTHON311) -I -S tools/closure_table.py $@ pyshim/closure.py

$(BUILD)/closure_table.o: $(BUILD)/closure_table.c host/python/closure.h
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/python/pyshim_blob.o: host/python/pyshim_blob.S $(BUILD)/pyshim.marshal
	@mkdir -p $(@D)
	$(CC) -c -DPYSHIM_BLOB='"$(BUILD)/pyshim.marshal"' -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libpysnip.a | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libpysnip.a $(LDLIBS)

# The kernel's unit tests reach libcrypto (its HMAC) through the archive.
$(BUILD)/tests/test_kernel_%: LDLIBS += $(KERNEL_LIBS)

$(BUILD):
	@mkdir -p $@

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

e2e: $(BIN) $(SERVE_BIN) $(KERNEL_BIN) mpl-cache/.built
	PYSNIP=$(abspath $(BIN)) $(PY) -m pytest -q -rs tests/e2e tests/attacks tests/load

# Dependencies point down the pipeline (DESIGN.md section 8): fails on a wrong-way include.
includes:
	$(PY) tools/check-includes

test: includes $(BIN) $(SERVE_BIN) $(KERNEL_BIN) unit e2e

# The same end-to-end suite as an unprivileged user (needs root to switch): the non-root
# path (user namespace, capabilities cleared, Landlock and seccomp without privilege).
# Tests whose proof needs root skip, saying why.
UNPRIV_USER ?= nobody
# The tree is copied to a world-readable directory first: a checkout under /root is not.
test-unprivileged: $(BIN) $(SERVE_BIN) $(KERNEL_BIN) mpl-cache/.built
	@d=$$(mktemp -d /tmp/pysnip-unpriv.XXXXXX) && chmod 755 $$d && \
	tar cf - --exclude=./build --exclude=./build-asan --exclude=./build-fuzz --exclude=./.git . | tar xf - -C $$d && \
	cp $(BIN) $(SERVE_BIN) $(KERNEL_BIN) $$d/ && chmod -R a+rX $$d && \
	(cd /tmp && runuser -u $(UNPRIV_USER) -- env HOME=/tmp PYSNIP=$$d/pysnip \
		$(PY) -m pytest -q -rs -p no:cacheprovider $$d/tests/e2e $$d/tests/attacks); \
	rc=$$?; rm -rf $$d; exit $$rc

asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/pysnip OPT=-O1 \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		test
# LeakSanitizer would report the interpreter's intentional at-exit allocations; tests that
# need RLIMIT_AS (which ASan's shadow memory makes unusable) skip, saying so.
asan: export PYSNIP_SANITIZER = 1
asan: export ASAN_OPTIONS = detect_leaks=0:abort_on_error=0
asan: export UBSAN_OPTIONS = print_stacktrace=1

bench: $(BIN) $(SERVE_BIN) $(KERNEL_BIN) mpl-cache/.built
	$(PY) tests/bench/bench.py --pysnip $(abspath $(BIN))
	$(PY) tests/bench/bench_serve.py --pysnip $(abspath $(BIN))
	$(PY) tests/bench/bench_scientific.py --pysnip $(abspath $(BIN))
	$(PY) tests/bench/bench_session.py --pysnip $(abspath $(BIN))
	$(PY) tests/bench/bench_kernel.py --pysnip $(abspath $(BIN))

# The same host/ sources again, with clang and ASan+UBSan+libFuzzer: tests/fuzz/fuzz.mk.
fuzz:
	$(MAKE) -f tests/fuzz/fuzz.mk run

deps:
	./tools/install-deps

clean:
	rm -rf build build-asan build-fuzz pysnip pysnip-serve pysnip-kernel
