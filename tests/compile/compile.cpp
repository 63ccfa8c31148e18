// The public header as C++ (enabled and disabled builds both compile this file).
#include "compile.c"
