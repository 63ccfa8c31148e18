/*
 * test_netstats_off.c - compiled without MPROF_ENABLE: the netstats macros must not evaluate
 * their arguments (a call with side effects leaves the counter untouched) and must not
 * reference the library (the object is checked with nm by ctest).
 */
#include "mprof/netstats.h"

int netstats_disabled_macros_evaluate_nothing(void);

int netstats_disabled_macros_evaluate_nothing(void)
{
    int evaluated = 0;
    mprof_netstats ns;
    MPROF_NETSTATS_INIT(&ns, (evaluated++, (const mprof_netstats_desc *)0));
    MPROF_NETSTATS_SENT(&ns, (size_t)evaluated++);
    MPROF_NETSTATS_RECEIVED(&ns, (size_t)evaluated++);
    MPROF_NETSTATS_RTT(&ns, (uint64_t)evaluated++);
    MPROF_NETSTATS_TICK(&ns, (uint64_t)evaluated++);
    (void)ns;
    return evaluated;
}
