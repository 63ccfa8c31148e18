// compile.cpp - tracy/TracyC.h as C++11, with TRACY_ENABLE and without (tests/tracy/CMakeLists.txt
// builds it both ways): the macros a C++ file of an engine uses through Tracy's C API.
#include <tracy/TracyC.h>

#include <cstdlib>

extern "C" int tracy_compile_cpp(int frames);

int tracy_compile_cpp(int frames)
{
    TracyCZoneNC(ctx, "Cpp::update", 0x2fa84f, 1);
    int sum = 0;
    for (int i = 0; i < frames; i++) {
        TracyCZoneN(inner, "Cpp::inner", 1);
        TracyCZoneValue(inner, static_cast<uint64_t>(i));
        sum += i;
        TracyCPlotI("cpp_sum", sum);
        TracyCZoneEnd(inner);
        TracyCFrameMark;
    }
    void *p = std::malloc(16);
    TracyCAllocN(p, 16, "Cpp");
    TracyCFreeN(p, "Cpp");
    std::free(p);
    TracyCMessageL("cpp done");
    {
        TracyCZone(unnamed, 1); // named after the function, as in C
        TracyCZoneEnd(unnamed);
    }
    TracyCZoneEnd(ctx);
    return sum;
}
