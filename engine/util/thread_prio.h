/* thread_prio: the calling thread's nice value, for a server that decodes
 * below the priority at which it answers cheap requests (--decode-nice).
 *
 * Linux's nice value is per thread, and threads created afterwards inherit
 * it.  Raising a priority again may need a privilege; a priority is never a
 * result, so failing is only reported (-1), never fatal.
 *
 * Tried and left out: a 0.1 ms EEVDF slice (sched_setattr, Linux >= 6.12)
 * for every other thread, so that a waking HTTP thread would preempt a
 * decoder at once: /detect's p99 with every decode slot busy was no better
 * than with the nice value alone (BENCHMARKS.md, issue 48). */
#ifndef MT_THREAD_PRIO_H
#define MT_THREAD_PRIO_H

/* 0, or -1 (errno) when the nice value could not be set. */
int mt_thread_nice(int nice);

#endif
