/* SPDX-License-Identifier: MIT */
/* Raw system calls: -errno in the return value, errno never touched. */
#ifndef MC_SYSCALL_H
#define MC_SYSCALL_H

#include <errno.h>
#include <unistd.h>

#if defined(__x86_64__)
static inline long __mc_sys6(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	long ret;
	register long r10 __asm__("r10") = a3;
	register long r8 __asm__("r8") = a4;
	register long r9 __asm__("r9") = a5;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long __mc_sys6(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a0;
	register long x1 __asm__("x1") = a1;
	register long x2 __asm__("x2") = a2;
	register long x3 __asm__("x3") = a3;
	register long x4 __asm__("x4") = a4;
	register long x5 __asm__("x5") = a5;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
/* Portable fallback: syscall(2) sets errno, so put it back. */
static inline long __mc_sys6(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	int saved = errno;
	long ret = syscall(nr, a0, a1, a2, a3, a4, a5);

	if (ret == -1) {
		ret = -errno;
	}
	errno = saved;
	return ret;
}
#endif

#define __mc_sys0(nr) __mc_sys6((nr), 0, 0, 0, 0, 0, 0)
#define __mc_sys1(nr, a) __mc_sys6((nr), (long)(a), 0, 0, 0, 0, 0)
#define __mc_sys2(nr, a, b) __mc_sys6((nr), (long)(a), (long)(b), 0, 0, 0, 0)
#define __mc_sys3(nr, a, b, c) __mc_sys6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define __mc_sys4(nr, a, b, c, d) \
	__mc_sys6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define __mc_sys5(nr, a, b, c, d, e) \
	__mc_sys6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

#endif
