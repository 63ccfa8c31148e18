#include <mprof/mprof.h>
int main(void)
{
    for (int i = 0; i < 10; i++) {
        MPROF_ZONE_C("consumer", MPROF_COLOR_IO);
        MPROF_FRAME_MARK();
    }
    return 0;
}
