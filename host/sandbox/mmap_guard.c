/* A retry storm of failing mmaps becomes a clean end instead of a spin.
 *
 * OpenBLAS's blas_memory_alloc retries a failed buffer mmap forever: under an RLIMIT_AS of
 * 100-200 MB a 300x300 matmul (its buffer is a 128 MB reservation on x86-64) spins at 100% CPU
 * until the wall clock, instead of failing. This mmap, in the executable, interposes on
 * libc's for every library (the binary exports its symbols: -Wl,--export-dynamic), and once
 * a worker arms it, ends the run after STORM consecutive ENOMEM failures with no success
 * between: "out of memory" on stderr and SIGABRT, which the verdict classifies as
 * memory_limit. Nothing that gives up on a failed allocation comes near STORM failures. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

enum { STORM = 512 };

static int armed;
static unsigned fails;

void ps_mmap_guard_arm(void)
{
	armed = 1;
	fails = 0;
}

static void storm(void)
{
	static const char msg[] = "pysnip: mmap: out of memory, 512 mmaps in a row failed (a "
				  "library retrying an allocation forever); the run ends\n";
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
	_exit(134);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);

	if (r != -1) {
		fails = 0;
		return (void *)r;
	}
	if (armed && errno == ENOMEM && ++fails >= STORM)
		storm();
	return MAP_FAILED;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));
