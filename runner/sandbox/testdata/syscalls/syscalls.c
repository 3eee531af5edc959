/* A test helper for package sandbox (seccomp_test.go builds it with gcc,
 * statically): for each system call named on the command line it makes the
 * call with all-zero arguments and prints "NAME ERRNO" (or "NAME ok" when
 * it succeeded), one a line. "i386:keyctl" makes keyctl through the 32-bit
 * ABI (int 0x80), which a filter written for x86_64 numbers alone would
 * miss. Zero arguments make every call harmless when it is allowed: each
 * fails with EFAULT, EINVAL or EPERM, or does nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct call { const char *name; long nr; };

static const struct call calls[] = {
	{"io_uring_setup", SYS_io_uring_setup},
	{"io_uring_enter", SYS_io_uring_enter},
	{"io_uring_register", SYS_io_uring_register},
	{"keyctl", SYS_keyctl},
	{"add_key", SYS_add_key},
	{"request_key", SYS_request_key},
	{"bpf", SYS_bpf},
	{"perf_event_open", SYS_perf_event_open},
	{"userfaultfd", SYS_userfaultfd},
	{"kexec_load", SYS_kexec_load},
	{"kexec_file_load", SYS_kexec_file_load},
	{"init_module", SYS_init_module},
	{"finit_module", SYS_finit_module},
	{"delete_module", SYS_delete_module},
	{"open_by_handle_at", SYS_open_by_handle_at},
	{"lookup_dcookie", SYS_lookup_dcookie},
	{"quotactl", SYS_quotactl},
	{"acct", SYS_acct},
	{"swapon", SYS_swapon},
	{"swapoff", SYS_swapoff},
	{"reboot", SYS_reboot},
	{"iopl", SYS_iopl},
	{"ioperm", SYS_ioperm},
	{"uselib", SYS_uselib},
	{"fanotify_init", SYS_fanotify_init},
	{"syslog", SYS_syslog},
	{"getpid", SYS_getpid},
};

static void report(const char *name, long r, int err) {
	if (r >= 0)
		printf("%s ok\n", name);
	else
		printf("%s %s\n", name, strerrorname_np(err));
}

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		const char *name = argv[i];
		if (strcmp(name, "i386:keyctl") == 0) {
			long r;
			/* keyctl is 288 in the i386 table. */
			__asm__ volatile("int $0x80" : "=a"(r) : "a"(288L), "b"(0L), "c"(0L), "d"(0L) : "memory");
			report(name, r < 0 ? -1 : r, r < 0 ? (int)-r : 0);
			continue;
		}
		long nr = -1;
		for (size_t j = 0; j < sizeof calls / sizeof calls[0]; j++)
			if (strcmp(calls[j].name, name) == 0)
				nr = calls[j].nr;
		if (nr < 0) {
			printf("%s unknown\n", name);
			continue;
		}
		errno = 0;
		long r = syscall(nr, 0L, 0L, 0L, 0L, 0L, 0L);
		report(name, r, errno);
	}
	return 0;
}
