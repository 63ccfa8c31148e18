/* Links the enabled compile check against the library and runs it once with zero setup: the
 * first event starts the profiler; with nothing configured nothing is recorded or written. */
int mprof_compile_check(int x);
int main(void)
{
    return mprof_compile_check(0) == 1 ? 0 : 1;
}
