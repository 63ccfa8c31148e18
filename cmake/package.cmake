# package.cmake - the Debian package (`make package`, or `cpack -G DEB` in the build directory):
# mprof_<version>_<arch>.deb with what `cmake --install` installs: libmprof and libmprof_tracy
# (shared, under their versioned sonames, and static), the headers, the CMake package and the
# pkg-config files, the mprof command, its man pages and the documentation, under /usr. Its
# Depends line is computed by dpkg-shlibdeps from what the binaries link; the -dev packages a
# static link needs are Recommends. tests/check_deb.sh installs it, uses it and removes it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "mprof")
set(CPACK_PACKAGE_CONTACT "mprof developers <mprof@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "frame profiler for C programs: game engines and other real-time code")
set(CPACK_PACKAGE_DESCRIPTION
  "mprof records zones, frames, plots, messages, memory, locks, fibers and GPU work from
programs instrumented with its macros (or with Tracy's C API through its drop-in
tracy/TracyC.h), and reads the captures with one command: mprof report, capture,
view, export, diff, gate, ci, store, history and doctor.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libmprof_tracy links libmprof from this same package: dpkg-shlibdeps looks for it there.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src/runtime)
# A shlibs file for the package's libraries, and the ldconfig trigger that goes with it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# mprof loads libpq only for a PostgreSQL run store (src/store/store_pg.c), so dpkg-shlibdeps does
# not see it: named here, and the dependencies it finds are added after it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libpq5")
# What building against the static libraries and reading the pkg-config files needs.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "pkg-config, libzstd-dev, libxxhash-dev, libunwind-dev")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cmake")
# Only what the install rules name: no tests, benchmarks or examples.
set(CPACK_SOURCE_IGNORE_FILES "/build.*/;/\\\\.git/;/node_modules/")
include(CPack)
