# libFuzzer targets: `make fuzz` (the top Makefile calls this file with -f).
#
# Every tests/fuzz/fuzz_NAME.c is one target, build-fuzz/fuzz_NAME: adding a parser's target is
# adding that one file (seeds in tests/fuzz/corpus/NAME/, an optional dictionary NAME.dict).
# The library is the same host/*/*.c the binaries are made of, compiled again with clang and
# ASan+UBSan into build-fuzz/libpysnip-fuzz.a; a target links only the objects its entry
# points reach, and with --as-needed only the shared libraries those objects call (the
# interpreter only if a target reaches host/python/). The targets themselves build with -Werror.
#
#   make fuzz                  build every target and run each for FUZZ_TIME seconds
#   make fuzz FUZZ_TIME=600    longer; FUZZ_TARGETS="units quote" for some of them
#   build-fuzz/fuzz_NAME DIR   run one by hand (libFuzzer's own options apply)
#
# A crash, a sanitizer report, a leak (LeakSanitizer is on: these are parsers, not the
# interpreter, so nothing may be left allocated), a timeout or running out of memory fails make.

FUZZ_CC     ?= clang-14
FUZZ_BUILD  ?= build-fuzz
FUZZ_TIME   ?= 60
FUZZ_RSS_MB ?= 2048
# libzmq and libcrypto are for the Jupyter kernel's parsers (host/kernel/), when they exist.
FUZZ_PKGS   := python3-embed libseccomp libcap-ng libcjson libmicrohttpd libcurl
FUZZ_PKGS_OPT := libzmq libcrypto
FUZZ_PKGS   += $(foreach p,$(FUZZ_PKGS_OPT),$(shell pkg-config --exists $(p) && echo $(p)))

FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The project's warnings, not -Werror: a clang-only warning in a file no target reaches must
# not stop the fuzzing of the others.
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Wshadow -Wno-unused-parameter \
               -Wno-missing-field-initializers -D_GNU_SOURCE \
               -DPS_FUZZ=1 -Ihost $(shell pkg-config --cflags $(FUZZ_PKGS)) $(FUZZ_SAN)
FUZZ_LDLIBS := -Wl,--as-needed $(shell pkg-config --libs $(FUZZ_PKGS)) -lm -ldl

FUZZ_MAINS  := host/cli/main.c host/cli/serve_main.c $(wildcard host/cli/*_main.c)
FUZZ_LIB_SRCS := $(filter-out $(FUZZ_MAINS),$(wildcard host/*/*.c))
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:host/%.c=$(FUZZ_BUILD)/%.o)
FUZZ_HDRS   := $(wildcard host/*/*.h) tests/fuzz/fuzz.h
FUZZ_ALL    := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_BINS   := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

.PHONY: run build
# Every target runs even after one fails; the last line counts them.
run: $(FUZZ_BINS)
	@ok=0; bad=0; for t in $(FUZZ_TARGETS); do \
		if FUZZ_TIME=$(FUZZ_TIME) FUZZ_RSS_MB=$(FUZZ_RSS_MB) tests/fuzz/run-target \
			$(FUZZ_BUILD) $$t; then ok=$$((ok + 1)); else bad=$$((bad + 1)); fi; \
	done; echo "fuzz: $$ok passed, $$bad failed"; [ $$bad -eq 0 ]

build: $(FUZZ_BINS)

$(FUZZ_BUILD)/%.o: host/%.c $(FUZZ_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# Made anew each time, as the main archive is (a stale member could win the link).
$(FUZZ_BUILD)/libpysnip-fuzz.a: $(FUZZ_LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libpysnip-fuzz.a $(FUZZ_HDRS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libpysnip-fuzz.a \
		$(FUZZ_LDLIBS)
