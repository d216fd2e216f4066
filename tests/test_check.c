/* test_check.c: engine/util/check.h.
 *  - MT_ASSERT as a debug or sanitizer build compiles it (-DMT_ASSERT_ABORT): a broken
 *    invariant stops the process (SIGABRT) after printing "file:line: assertion failed:
 *    expr" with this file's name and the line of the MT_ASSERT; a kept one does nothing.
 *  - as a release build compiles it: the function returns MT_ERR_INTERNAL with
 *    "internal error at file:line: expr" in err, mt_assert_failures() counts it, and the
 *    process goes on; MT_ASSERT_OR runs its statement instead.
 *  - mt_grow / MT_GROW: doubling from min to hold need, contents kept, no call when
 *    there is room, -1 with the pointer and capacity unchanged on overflow.
 * The two builds' behaviours are both tested here by choosing MT_ASSERT_ABORTS, the
 * switch the header derives from MT_ASSERT_ABORT, for each function below. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/check.h"

/* ---- a debug build's MT_ASSERT ---- */
#undef MT_ASSERT_ABORTS
#define MT_ASSERT_ABORTS 1
static int debug_line;
static mt_status debug_invariant(int ok, mt_err *err)
{
    debug_line = __LINE__ + 1;
    MT_ASSERT(ok == 1, err);
    return MT_OK;
}

/* ---- a release build's ---- */
#undef MT_ASSERT_ABORTS
#define MT_ASSERT_ABORTS 0
static int release_line, or_line;
static mt_status release_invariant(int ok, mt_err *err)
{
    release_line = __LINE__ + 1;
    MT_ASSERT(ok == 1, err);
    return MT_OK;
}

static int release_or(int ok)
{
    or_line = __LINE__ + 1;
    MT_ASSERT_OR(ok == 1, return -7);
    return 0;
}

/* Runs debug_invariant(ok) in a child with its stderr in a pipe: the wait status, and
 * what it printed in out. */
static int run_debug_child(int ok, char *out, size_t cap)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        signal(SIGABRT, SIG_DFL);
        mt_err err = {0};
        _exit(debug_invariant(ok, &err) == MT_OK ? 0 : 3);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = 0;
    close(fd[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void test_debug_build_stops_with_file_line(void **state)
{
    (void)state;
    char out[1024], want[256];
    mt_err err = {0};
    assert_int_equal(debug_invariant(1, &err), MT_OK);   /* kept: returns; sets debug_line here too */
    int st = run_debug_child(0, out, sizeof out);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
    snprintf(want, sizeof want, "test_check.c:%d: assertion failed: ok == 1", debug_line);
    if (!strstr(out, want))
        fail_msg("stderr '%s' lacks '%s'", out, want);

    st = run_debug_child(1, out, sizeof out);        /* a kept invariant: nothing */
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_string_equal(out, "");
}

static void test_release_build_returns_internal(void **state)
{
    (void)state;
    unsigned long before = mt_assert_failures();
    mt_err err = {0};
    assert_int_equal(release_invariant(1, &err), MT_OK);
    assert_int_equal(mt_assert_failures(), before);

    assert_int_equal(release_invariant(0, &err), MT_ERR_INTERNAL);
    assert_int_equal(err.status, MT_ERR_INTERNAL);
    char want[256];
    snprintf(want, sizeof want, "test_check.c:%d: ok == 1", release_line);
    if (!strstr(err.msg, "internal error at") || !strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    assert_int_equal(mt_assert_failures(), before + 1);

    assert_int_equal(release_invariant(0, NULL), MT_ERR_INTERNAL);   /* err may be NULL */
    assert_int_equal(release_or(1), 0);
    assert_int_equal(release_or(0), -7);
    assert_int_equal(mt_assert_failures(), before + 3);
    assert_true(or_line > release_line);
}

static void test_grow(void **state)
{
    (void)state;
    int32_t *v = NULL;
    size_t cap = 0;
    assert_int_equal(MT_GROW(v, cap, 1), 0);
    assert_int_equal(cap, 16);                       /* from min */
    for (int i = 0; i < 16; i++)
        v[i] = i;
    int32_t *same = v;
    assert_int_equal(MT_GROW(v, cap, 16), 0);        /* room already: nothing moves */
    assert_ptr_equal(v, same);
    assert_int_equal(cap, 16);
    assert_int_equal(MT_GROW(v, cap, 17), 0);
    assert_int_equal(cap, 32);
    assert_int_equal(MT_GROW(v, cap, 1000), 0);
    assert_int_equal(cap, 1024);                     /* doubled until it holds need */
    for (int i = 0; i < 16; i++)
        assert_int_equal(v[i], i);                   /* contents kept */

    int32_t *before = v;
    assert_int_equal(MT_GROW(v, cap, SIZE_MAX / 2), -1);   /* bytes overflow size_t */
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 1024);
    assert_int_equal(mt_grow(&v, &cap, SIZE_MAX, 1, 16), -1);
    assert_int_equal(cap, 1024);
    free(v);

    assert_int_equal(mt_grow_cap(0, 5, 8, 4), 8);
    assert_int_equal(mt_grow_cap(100, 101, 8, 4), 200);
    assert_int_equal(mt_grow_cap(0, 0, 8, 0), 1);
    assert_int_equal(mt_grow_cap(1, SIZE_MAX / 4 + 2, 8, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debug_build_stops_with_file_line),
        cmocka_unit_test(test_release_build_returns_internal),
        cmocka_unit_test(test_grow),
    };
    return cmocka_run_group_tests_name("test_check", tests, NULL, NULL);
}
