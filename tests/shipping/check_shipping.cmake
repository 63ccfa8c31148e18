# check_shipping.cmake - proves that a shipping build of instrumented code carries nothing of mprof.
#
# Run by ctest (label "contract") as
#   cmake -DCC=compiler -DSRC=instrumented.c -DINCLUDE=include-dir -DWORK=scratch-dir
#         -DOBJDUMP=objdump -DOBJCOPY=objcopy -DNM=nm -DMODE=all|strip|guard -P check_shipping.cmake
# (MODE all runs guard, then strip).
#
# MODE strip: compiles instrumented.c three ways - shipping (-DMPROF_SHIPPING), default (no
# define: profiling is off unless asked for) and plain (a copy with every line that uses an mprof
# macro blanked out and the include removed) - at -O0, -O2 and -Os, and requires for each level
#   1. the .text sections of shipping, default and plain to be byte-identical (objcopy + compare),
#   2. the disassembly with relocations and the section table to be identical (objdump -dr, -h),
#   3. no symbol of the shipping object, defined or referenced, to contain "mprof" (nm),
# and that the shipping program links without libmprof, runs, and evaluates no macro argument.
# As a control, the same source built with -DMPROF_ENABLE must reference mprof symbols, so the nm
# check can fail.
#
# MODE guard: compiling with -DMPROF_SHIPPING -DMPROF_ENABLE must fail with the exact message of
# mprof.h.

cmake_minimum_required(VERSION 3.20)

foreach(v CC SRC INCLUDE WORK MODE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_shipping.cmake: -D${v}=... is required")
  endif()
endforeach()
file(MAKE_DIRECTORY "${WORK}")

set(GUARD_MESSAGE "mprof: shipping builds must not enable profiling (MPROF_ENABLE); instrumentation is stripped by leaving MPROF_ENABLE undefined.")

# compile(OUT_OBJ DIR FLAGS...) compiles DIR/instrumented.c from inside DIR, so that every
# variant has the same file name in its symbol table.
function(compile out_obj dir)
  execute_process(COMMAND "${CC}" -std=c11 -I "${INCLUDE}" ${ARGN} instrumented.c
                          -c -o "${out_obj}"
                  WORKING_DIRECTORY "${dir}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling ${out_obj} failed (${ARGN}):\n${out}${err}")
  endif()
endfunction()

if(MODE STREQUAL "guard" OR MODE STREQUAL "all")
  execute_process(COMMAND "${CC}" -std=c11 -DMPROF_SHIPPING -DMPROF_ENABLE -I "${INCLUDE}"
                          -c "${SRC}" -o "${WORK}/guard.o"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "-DMPROF_SHIPPING -DMPROF_ENABLE compiled; it must be a compile error")
  endif()
  string(FIND "${err}${out}" "${GUARD_MESSAGE}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the compile error lacks the exact guard message\n  expected: ${GUARD_MESSAGE}\n  got:\n${err}${out}")
  endif()
  message(STATUS "guard: -DMPROF_SHIPPING -DMPROF_ENABLE fails with the exact message")
  if(MODE STREQUAL "guard")
    return()
  endif()
elseif(NOT MODE STREQUAL "strip")
  message(FATAL_ERROR "MODE must be all, strip or guard, not '${MODE}'")
endif()
foreach(v OBJDUMP OBJCOPY NM)
  if(NOT ${v})
    message(FATAL_ERROR "check_shipping.cmake: -D${v}=... is required for MODE=strip")
  endif()
endforeach()

# Coverage: every function-like macro of mprof.h's disabled branch must be used by the source,
# so a macro added to the header later cannot escape this check.
file(READ "${SRC}" text)
file(READ "${INCLUDE}/mprof/mprof.h" header)
string(FIND "${header}" "#else /* !MPROF_ENABLE" off_at)
if(off_at EQUAL -1)
  message(FATAL_ERROR "mprof.h has no '#else /* !MPROF_ENABLE' branch to check against")
endif()
string(SUBSTRING "${header}" ${off_at} -1 disabled)
string(REGEX MATCHALL "#define MPROF_[A-Z0-9_]+\\(" defs "${disabled}")
set(missing "")
foreach(d IN LISTS defs)
  string(REGEX REPLACE "#define (MPROF_[A-Z0-9_]+)\\(" "\\1" m "${d}")
  string(REGEX MATCH "[^A-Z0-9_]${m}\\(" used "${text}")
  if(NOT used)
    list(APPEND missing ${m})
  endif()
endforeach()
list(LENGTH defs n_defs)
if(missing)
  message(FATAL_ERROR "instrumented.c does not use these mprof.h macros: ${missing}")
endif()
message(STATUS "instrumented.c uses all ${n_defs} macros of mprof.h")

# The plain copy: every line that mentions an mprof macro or the header becomes an empty line,
# so line numbers (and anything derived from __LINE__) stay the same.
string(REGEX REPLACE "#include <mprof/mprof.h>" "" plain "${text}")
string(REGEX REPLACE "\n[^\n]*MPROF_[^\n]*" "\n" plain "${plain}")
string(FIND "${plain}" "MPROF_" left)
if(NOT left EQUAL -1)
  message(FATAL_ERROR "the plain copy still mentions MPROF_")
endif()
string(REGEX MATCHALL "\n" lines_a "${text}")
string(REGEX MATCHALL "\n" lines_b "${plain}")
list(LENGTH lines_a na)
list(LENGTH lines_b nb)
if(NOT na EQUAL nb)
  message(FATAL_ERROR "the plain copy has ${nb} lines, the source ${na}")
endif()
set(SHIP_DIR "${WORK}/instrumented")
set(PLAIN_DIR "${WORK}/plain")
file(MAKE_DIRECTORY "${SHIP_DIR}" "${PLAIN_DIR}")
file(WRITE "${SHIP_DIR}/instrumented.c" "${text}")
file(WRITE "${PLAIN_DIR}/instrumented.c" "${plain}")

function(run_tool out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed:\n${err}")
  endif()
  # Drop the lines that name the object file.
  string(REGEX REPLACE "[^\n]*\\.o:[^\n]*file format[^\n]*" "" out "${out}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(same_or_fail what a b)
  if(NOT "${a}" STREQUAL "${b}")
    file(WRITE "${WORK}/${what}.a.txt" "${a}")
    file(WRITE "${WORK}/${what}.b.txt" "${b}")
    message(FATAL_ERROR "${what} differ; see ${WORK}/${what}.a.txt and .b.txt")
  endif()
endfunction()

set(levels "-O0" "-O2" "-Os")
foreach(opt IN LISTS levels)
  string(REPLACE "-" "" tag "${opt}")
  set(extra "")
  if(opt STREQUAL "-O0")
    # Unoptimised code keeps the dead stores of the value-returning macros' variables.
    set(extra "-DNO_VALUE_MACROS")
  endif()
  set(ship "${WORK}/shipping_${tag}.o")
  set(deflt "${WORK}/default_${tag}.o")
  set(plainobj "${WORK}/plain_${tag}.o")
  compile("${ship}" "${SHIP_DIR}" ${opt} ${extra} -DMPROF_SHIPPING)
  compile("${deflt}" "${SHIP_DIR}" ${opt} ${extra})
  compile("${plainobj}" "${PLAIN_DIR}" ${opt} ${extra})

  # Every code section (.text, and .text.startup and friends that gcc -O2 uses).
  run_tool(sections "${OBJDUMP}" -h "${ship}")
  string(REGEX MATCHALL " \\.text[.A-Za-z0-9_]*" code_sections "${sections}")
  if(NOT code_sections)
    message(FATAL_ERROR "${ship} has no code section; the comparison would prove nothing")
  endif()
  set(text_bytes 0)
  foreach(sec IN LISTS code_sections)
    string(STRIP "${sec}" sec)
    foreach(obj IN ITEMS "${ship}" "${deflt}" "${plainobj}")
      execute_process(COMMAND "${OBJCOPY}" -O binary -j "${sec}" "${obj}" "${obj}${sec}.bin"
                      RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "objcopy -j ${sec} ${obj} failed: ${err}")
      endif()
    endforeach()
    file(SIZE "${ship}${sec}.bin" sec_bytes)
    math(EXPR text_bytes "${text_bytes} + ${sec_bytes}")
    foreach(other IN ITEMS "${deflt}" "${plainobj}")
      execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${ship}${sec}.bin"
                              "${other}${sec}.bin" RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${opt}: section ${sec} of ${ship} and ${other} differ")
      endif()
    endforeach()
  endforeach()
  if(text_bytes EQUAL 0)
    message(FATAL_ERROR "${ship} has no code bytes; the comparison would prove nothing")
  endif()
  foreach(other IN ITEMS "${deflt}" "${plainobj}")
    run_tool(dis_a "${OBJDUMP}" -dr "${ship}")
    run_tool(dis_b "${OBJDUMP}" -dr "${other}")
    same_or_fail("disassembly_${tag}" "${dis_a}" "${dis_b}")
    run_tool(sec_a "${OBJDUMP}" -h "${ship}")
    run_tool(sec_b "${OBJDUMP}" -h "${other}")
    same_or_fail("sections_${tag}" "${sec_a}" "${sec_b}")
  endforeach()

  run_tool(syms "${NM}" "${ship}")
  string(TOLOWER "${syms}" syms_lc)
  string(FIND "${syms_lc}" "mprof" hit)
  if(NOT hit EQUAL -1)
    message(FATAL_ERROR "${opt}: the shipping object references mprof symbols:\n${syms}")
  endif()
  message(STATUS "${opt}: shipping, default and plain builds have identical code (${text_bytes} bytes of .text); no mprof symbol")
endforeach()

# Control: an enabled build does reference the library, so the nm check above can fail.
compile("${WORK}/enabled.o" "${SHIP_DIR}" -O2 -DMPROF_ENABLE)
run_tool(esyms "${NM}" -u "${WORK}/enabled.o")
string(FIND "${esyms}" "mprof__" hit)
if(hit EQUAL -1)
  message(FATAL_ERROR "control failed: the enabled build references no mprof symbol:\n${esyms}")
endif()

# The shipping program links without libmprof and never evaluates a macro argument.
execute_process(COMMAND "${CC}" -O2 -DMPROF_SHIPPING -I "${INCLUDE}" "${SRC}" -o "${WORK}/shipping_prog"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the shipping program does not link without libmprof:\n${err}")
endif()
execute_process(COMMAND "${WORK}/shipping_prog" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR out MATCHES "costly")
  message(FATAL_ERROR "the shipping program evaluated a macro argument (exit ${rc}):\n${out}")
endif()
message(STATUS "shipping program links without libmprof and evaluates no macro argument: ${out}")
