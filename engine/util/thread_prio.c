/* thread_prio: a thread's nice value (thread_prio.h). */
#include "thread_prio.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int mt_thread_nice(int nice)
{
    /* PRIO_PROCESS with a thread id: that thread alone (Linux) */
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) == 0 ? 0 : -1;
}
