/* thread_prio: a thread's scheduling class and nice value (thread_prio.h). */
#include "thread_prio.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int mt_thread_nice(int nice)
{
    /* explicitly SCHED_OTHER first: a thread started from a real-time HTTP
     * thread (--http-sched rr) inherited SCHED_RR; leaving it needs no
     * privilege, and it keeps the thread's nice value */
    struct sched_param sp = { .sched_priority = 0 };
    int rc = pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    /* PRIO_PROCESS with a thread id: that thread alone (Linux) */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0)
        return -1;
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

int mt_thread_rt(int on)
{
    struct sched_param sp = { .sched_priority = on ? 1 : 0 };
    int rc = pthread_setschedparam(pthread_self(), on ? SCHED_RR : SCHED_OTHER, &sp);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}
