/*
 * test_automation_disabled.c - capture automation without MPROF_ENABLE: every function is a
 * static inline no-op returning a typed constant, and the program links without libmprof (this
 * executable is not linked against it, so a stray reference fails the build).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mprof/automation.h"

static void automation_compiles_away(void **state)
{
    (void)state;
    mprof_capture_automation_config cfg = {0};
    cfg.trigger = MPROF_TRIGGER_NAMED;
    cfg.event_name = "hitch";
    mprof_capture_automation *a = mprof_capture_automation_create(&cfg);
    assert_null(a);
    mprof_capture_automation_fire(a, "hitch");
    assert_int_equal(mprof_capture_automation_start(a), MPROF_ERR_STATE);
    assert_int_equal(mprof_capture_automation_poll(a), MPROF_CAPTURE_DISABLED);
    assert_int_equal(mprof_capture_automation_status(a), MPROF_CAPTURE_DISABLED);
    assert_string_equal(mprof_capture_status_name(MPROF_CAPTURE_SAVED), "disabled");
    assert_non_null(mprof_capture_automation_reason(a));
    assert_string_equal(mprof_capture_automation_output(a), "");
    assert_int_equal(mprof_capture_automation_rearm(a), MPROF_ERR_STATE);
    mprof_capture_automation_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(automation_compiles_away)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
