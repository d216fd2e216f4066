/* parallel.h: the engine's compute threads.
 *
 * One process-wide pool runs the chunks of one job at a time: the caller and
 * up to n-1 helper threads claim chunks [0, n_chunks) until none is left.  A
 * decode step at batch 1 is ~20 products of a few microseconds each, too
 * short for a thread wake-up per product, so helpers spin between jobs for a
 * while and only then sleep.  OpenBLAS is kept at one thread: its own
 * spinning threads would fight this pool for the cores.
 *
 * Results never depend on the split: each chunk writes its own outputs, and
 * callers arrange that an output is computed the same way in any chunk.
 */
#ifndef MT_PARALLEL_H
#define MT_PARALLEL_H

typedef void (*mt_par_fn)(void *ctx, int chunk);

/* Threads the pool may use (caller included), process-wide; n < 1 means 1. */
void mt_par_set_threads(int n);
int  mt_par_threads(void);

/* The nice value of the helper threads (Linux: a thread's own), process-wide
 * like their number; each helper takes it up before its next job.  A server
 * decodes below the priority at which it answers cheap requests (its
 * --decode-nice); the thread that calls mt_par_for sets its own. */
void mt_par_set_nice(int nice);

/* Run fn(ctx, c) for every c in [0, n_chunks), spread over the pool.  When the
 * pool is busy with another caller's job (another session, or a nested call)
 * the chunks run serially in the calling thread. */
void mt_par_for(int n_chunks, mt_par_fn fn, void *ctx);

/* The pool's rule for "a helper was descheduled" (then the next jobs run
 * serially for a while): the caller, having run `ran` chunks in ran_cycles
 * TSC cycles, then waited `waited` cycles for the helpers' last chunks.  A
 * running helper finishes within about one chunk; ~2 ms past two chunks is a
 * stall.  Exposed for tests/test_parallel.c. */
int mt_par_stalled(unsigned long long waited, int ran, unsigned long long ran_cycles);

#endif
