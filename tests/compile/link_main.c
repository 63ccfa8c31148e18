/* Links the enabled compile check against the library and runs it once with zero setup: the
 * first event starts the profiler; with nothing configured (MPROF_LISTEN=0, no capture path)
 * it records nothing, and every macro is still safe to call. */
#include "mprof/mprof.h"

#include <stdio.h>

int mprof_compile_check(int x);
int main(void)
{
    int r = mprof_compile_check(0);
    mprof_stats st;
    mprof_get_stats(&st);
    if (mprof_is_recording() || st.events_recorded != 0 || r < 0) {
        fprintf(stderr, "zero-setup run recorded %llu events (expected none)\n",
                (unsigned long long)st.events_recorded);
        return 1;
    }
    return 0;
}
