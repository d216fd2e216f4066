/* thread_prio: the calling thread's scheduling class and nice value, for a
 * server that decodes below the priority at which it answers cheap requests
 * (--decode-nice, --http-sched rr).
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

/* The calling thread in SCHED_OTHER at nice: 0, or -1 (errno) when the
 * class or the nice value could not be set (a decoding thread calls it, so
 * that one started from a real-time thread does not decode in SCHED_RR). */
int mt_thread_nice(int nice);

/* The calling thread in SCHED_RR priority 1 (on) or back in SCHED_OTHER
 * (off): 0, or -1 (errno: EPERM without CAP_SYS_NICE or RLIMIT_RTPRIO >= 1).
 * Threads the caller starts meanwhile inherit the class. */
int mt_thread_rt(int on);

#endif
