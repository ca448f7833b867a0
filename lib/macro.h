/* SPDX-License-Identifier: MIT */
/*
 * Small ownership, assertion and arithmetic helpers shared by every module.
 *
 * _cleanup_(f) runs f(&var) when var leaves scope; TAKE_PTR() hands a pointer
 * on and leaves NULL behind so the cleanup does nothing. Free functions are
 * NULL-safe and return NULL so "x = x_free(x);" reads naturally.
 *
 * assert() is for programming errors only (a NULL userdata, an argument no
 * caller may pass); input from outside (files, the bus, the kernel) gets an
 * error code. placed is never built with NDEBUG: its asserts stay checks.
 */
#pragma once

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef NDEBUG
#error "placed's asserts are checks: build it without -DNDEBUG"
#endif

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x)      (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b)          ((a) < (b) ? (a) : (b))
#define MAX(a, b)          ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))

#define USEC_PER_SEC  1000000ULL
#define USEC_PER_MSEC 1000ULL
#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_SEC  1000000000ULL

/* Return: clock's time now, in microseconds (CLOCK_MONOTONIC, CLOCK_REALTIME, ...). */
static inline uint64_t clock_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / NSEC_PER_USEC;
}

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

#define TAKE_PTR(p)                        \
        ({                                 \
                __typeof__(p) _took = (p); \
                (p) = NULL;                \
                _took;                     \
        })

/* Asserts that a pointer is set and gives it back: "Manager *m = ASSERT_PTR(userdata);". */
#define ASSERT_PTR(expr)                        \
        ({                                      \
                __typeof__(expr) _ptr = (expr); \
                assert(_ptr);                   \
                _ptr;                           \
        })

#define TAKE_FD(fd)               \
        ({                        \
                int _took = (fd); \
                (fd) = -1;        \
                _took;            \
        })

/* Declares a cleanup helper "xp(X **)" for a type whose free function is "x_free(X *)". */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        func(*p);               \
        }

/* For printing a name that may be NULL (a value out of an enum's range): "n/a". */
static inline const char *strna(const char *s) {
        return s ? s : "n/a";
}

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
