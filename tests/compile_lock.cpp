/* compile_lock.cpp - compile_lock.c as C++11. */
#include "compile_lock.c"
