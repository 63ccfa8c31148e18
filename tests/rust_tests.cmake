# The Rust bindings (bindings/rust): cargo's tests against this build's libmprof and
# mprof binary. Skipped (exit 77) where no cargo is installed. Not in sanitizer builds: the
# sanitizer's runtime would have to be linked into the Rust test programs too.
if(NOT MPROF_SANITIZE)
  add_test(NAME rust_bindings
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_rust.sh ${PROJECT_SOURCE_DIR}
      $<TARGET_FILE_DIR:mprof_static> $<TARGET_FILE:mprof_tool> ${PROJECT_BINARY_DIR}/rust-target)
  set_tests_properties(rust_bindings PROPERTIES LABELS "rust;contract" TIMEOUT 900
    SKIP_RETURN_CODE 77 ENVIRONMENT "MPROF_LISTEN=0")
endif()
