# man.cmake - the man pages: mprof(1) and mprof-<command>(1), made at build time from the
# built command's own --help texts (tools/man/manpages.sh), so the pages and --help cannot
# drift; installed under share/man/man1 by `cmake --install` and the Debian package.
find_program(MPROF_AWK NAMES awk mawk gawk)
if(NOT MPROF_AWK OR CMAKE_CROSSCOMPILING OR MPROF_BUILD_FUZZ)
  message(STATUS "mprof: no man pages (they need awk and a mprof that runs on this machine)")
  return()
endif()
set(MPROF_MAN_DIR ${PROJECT_BINARY_DIR}/man/man1)
add_custom_command(OUTPUT ${MPROF_MAN_DIR}/mprof.1
  COMMAND ${CMAKE_COMMAND} -E env AWK=${MPROF_AWK}
    sh ${PROJECT_SOURCE_DIR}/tools/man/manpages.sh $<TARGET_FILE:mprof_tool> ${MPROF_MAN_DIR}
    ${PROJECT_VERSION}
  DEPENDS mprof_tool ${PROJECT_SOURCE_DIR}/tools/man/manpages.sh
    ${PROJECT_SOURCE_DIR}/tools/man/help2roff.awk ${PROJECT_SOURCE_DIR}/tools/man/mprof.extra
  COMMENT "Man pages from the commands' --help"
  VERBATIM)
add_custom_target(mprof_man ALL DEPENDS ${MPROF_MAN_DIR}/mprof.1)
install(DIRECTORY ${MPROF_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
  FILES_MATCHING PATTERN "*.1")
