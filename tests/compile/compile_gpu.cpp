#include "compile_gpu.c"
