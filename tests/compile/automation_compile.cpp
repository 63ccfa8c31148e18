// automation.h compiles as C++ with and without MPROF_ENABLE (tests/CMakeLists.txt).
#include "mprof/automation.h"

int mprof_automation_compile_check(void);
int mprof_automation_compile_check(void)
{
    mprof_capture_automation_config cfg = mprof_capture_automation_config();
    cfg.trigger = MPROF_TRIGGER_FRAME;
    cfg.frame = 100;
    mprof_capture_automation *a = mprof_capture_automation_create(&cfg);
    mprof_capture_automation_fire(a, "hitch");
    int s = (int)mprof_capture_automation_poll(a);
    mprof_capture_automation_destroy(a);
    return s;
}
