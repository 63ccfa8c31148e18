# Installs the library, headers, the mprof command, a CMake package (mprof::mprof, and
# mprof::tracy for Tracy's C API), pkg-config files (mprof, mprof-tracy) and the documentation
# (the man pages: cmake/man.cmake).
include(CMakePackageConfigHelpers)
install(TARGETS mprof mprof_static mprof_alloc mprof_tracy mprof_tracy_static EXPORT mprofTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS mprof_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/mprof DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT mprofTargets NAMESPACE mprof:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mprof)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mprofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mprofConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mprof)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mprofConfig.cmake ${PROJECT_BINARY_DIR}/mprofConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mprof)
# The pkg-config file finds its prefix relative to itself, so an installed tree can move.
file(RELATIVE_PATH MPROF_PC_UP "/x/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/x")
configure_file(${PROJECT_SOURCE_DIR}/cmake/mprof.pc.in ${PROJECT_BINARY_DIR}/mprof.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/mprof-tracy.pc.in ${PROJECT_BINARY_DIR}/mprof-tracy.pc
  @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/mprof.pc ${PROJECT_BINARY_DIR}/mprof-tracy.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# The guides a user reads (the man pages point here), and the Tracy migration guide.
install(FILES README.md docs/WORKFLOW.md docs/API.md docs/CLI.md docs/MIGRATING.md docs/DOCTOR.md
  docs/STATISTICS.md docs/SYSTEM.md docs/FORMAT.md docs/CAPTURE.md docs/GATE.md docs/MEMORY.md
  docs/GPU.md docs/VIEW.md docs/EXPORT.md docs/STORE.md docs/OVERHEAD.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
